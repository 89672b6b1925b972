import PhiShaders

// The Swift twins of the shaders' push-constant blocks. Field order and types match the GLSL
// blocks named in each comment; `pushConstantLayouts` lets a test check every size against the
// SPIR-V, and pipelines check it again when they are made.

/// `MatmulConstants` of Shaders/matmul.comp and Shaders/prefill.glsl (the prompt products).
struct MatmulConstants {
    var rows: UInt32
    var columns: UInt32
    var tokens: UInt32
    var inputRow: UInt32
    var groupSize: UInt32
    var outputStride: UInt32
}

/// `MatvecConstants` of Shaders/matvec_io.glsl (the decode products).
struct MatvecConstants {
    var rows: UInt32
    var columns: UInt32
    var tokens: UInt32
    var inputRow: UInt32
    var groupSize: UInt32
    var outputStride: UInt32
    /// The RMSNorm epsilon of a norm prologue.
    var epsilon: Float
}

/// `EmbedConstants` of Shaders/embed.comp.
struct EmbedConstants {
    var count: UInt32
    var columns: UInt32
    var groupSize: UInt32
    var tokenOffset: UInt32
}

/// `ElementwiseConstants` of Shaders/elementwise.comp.
struct ElementwiseConstants {
    var count: UInt32
    var width: UInt32
    /// Elements of the input before the first row read (toHalf); parts added up (addParts).
    var offset: UInt32 = 0
}

/// `RopeConstants` of Shaders/rope_cache.comp.
struct RopeConstants {
    var count: UInt32
    var positionSlot: UInt32
    var heads: UInt32
    var kvHeads: UInt32
    var headDimension: UInt32
    var rotary: UInt32
    var context: UInt32
}

/// `AttentionConstants` of Shaders/attention.comp, attention_coopmat.comp and attention_split.comp.
struct AttentionConstants {
    var count: UInt32
    var positionSlot: UInt32
    var heads: UInt32
    var kvHeads: UInt32
    var headDimension: UInt32
    var context: UInt32
    var scale: Float
    var chunkSize: UInt32
    var chunks: UInt32
    /// Rotated leading dimensions of each head (attention_split.comp with ROPE).
    var rotary: UInt32
}

/// Every shader variant with the size of the Swift struct it is given as push constants.
public let pushConstantLayouts: [(shader: ShaderBinary, swiftSize: Int)] = [
    (ShaderLibrary.rmsNorm, MemoryLayout<RMSNormConstants>.size),
    (ShaderLibrary.rmsNormHalf, MemoryLayout<RMSNormConstants>.size),
    (ShaderLibrary.matvecQ4, MemoryLayout<MatvecConstants>.size),
    (ShaderLibrary.matvecQ8, MemoryLayout<MatvecConstants>.size),
    (ShaderLibrary.matvecAddQ4, MemoryLayout<MatvecConstants>.size),
    (ShaderLibrary.matvecAddQ8, MemoryLayout<MatvecConstants>.size),
    (ShaderLibrary.matvecStagedQ4, MemoryLayout<MatvecConstants>.size),
    (ShaderLibrary.matvecStagedQ8, MemoryLayout<MatvecConstants>.size),
    (ShaderLibrary.matvecStagedAddQ4, MemoryLayout<MatvecConstants>.size),
    (ShaderLibrary.matvecStagedAddQ8, MemoryLayout<MatvecConstants>.size),
    (ShaderLibrary.matvecStagedNormQ4, MemoryLayout<MatvecConstants>.size),
    (ShaderLibrary.matvecStagedNormQ8, MemoryLayout<MatvecConstants>.size),
    (ShaderLibrary.matvecStagedNormAddQ4, MemoryLayout<MatvecConstants>.size),
    (ShaderLibrary.matvecStagedNormAddQ8, MemoryLayout<MatvecConstants>.size),
    (ShaderLibrary.matvecStagedSiluQ4, MemoryLayout<MatvecConstants>.size),
    (ShaderLibrary.matvecStagedSiluQ8, MemoryLayout<MatvecConstants>.size),
    (ShaderLibrary.matvecStagedSiluAddQ4, MemoryLayout<MatvecConstants>.size),
    (ShaderLibrary.matvecStagedSiluAddQ8, MemoryLayout<MatvecConstants>.size),
    (ShaderLibrary.matmulQ4, MemoryLayout<MatmulConstants>.size),
    (ShaderLibrary.matmulQ8, MemoryLayout<MatmulConstants>.size),
    (ShaderLibrary.matmulTiledQ4, MemoryLayout<MatmulConstants>.size),
    (ShaderLibrary.matmulTiledQ8, MemoryLayout<MatmulConstants>.size),
    (ShaderLibrary.matmulCoopmatQ4, MemoryLayout<MatmulConstants>.size),
    (ShaderLibrary.matmulCoopmatQ8, MemoryLayout<MatmulConstants>.size),
    (ShaderLibrary.embedQ4, MemoryLayout<EmbedConstants>.size),
    (ShaderLibrary.embedQ8, MemoryLayout<EmbedConstants>.size),
    (ShaderLibrary.add, MemoryLayout<ElementwiseConstants>.size),
    (ShaderLibrary.siluGate, MemoryLayout<ElementwiseConstants>.size),
    (ShaderLibrary.siluGateHalf, MemoryLayout<ElementwiseConstants>.size),
    (ShaderLibrary.toHalf, MemoryLayout<ElementwiseConstants>.size),
    (ShaderLibrary.ropeCache, MemoryLayout<RopeConstants>.size),
    (ShaderLibrary.ropeCacheVec4, MemoryLayout<RopeConstants>.size),
    (ShaderLibrary.attention, MemoryLayout<AttentionConstants>.size),
    (ShaderLibrary.attentionCoopmat, MemoryLayout<AttentionConstants>.size),
    (ShaderLibrary.attentionSplit, MemoryLayout<AttentionConstants>.size),
    (ShaderLibrary.attentionSplitRope, MemoryLayout<AttentionConstants>.size),
    (ShaderLibrary.streamRead, MemoryLayout<StreamReadConstants>.size),
    (ShaderLibrary.argmax, MemoryLayout<ArgmaxConstants>.size),
]

/// `ArgmaxConstants` of Shaders/argmax.comp.
struct ArgmaxConstants {
    var count: UInt32
    var offset: UInt32
}

/// `StreamReadConstants` of Shaders/stream_read.comp.
struct StreamReadConstants {
    var count: UInt32
}
