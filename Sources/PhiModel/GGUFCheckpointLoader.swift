import Foundation
import PhiFormats

/// Loads a `phi3` or `llama` GGUF file into the engine layout: block formats become affine
/// groups (see `GGUFFile.matrix(named:)`), llama.cpp's Q/K row permutation of llama models is
/// undone, and q | k | v and gate | up are fused as the engine expects.
enum GGUFCheckpointLoader {
    static func load(file url: URL, progress: ((Double) -> Void)?) throws -> Checkpoint {
        let file = try GGUFFile(contentsOf: url)
        let config = try ModelConfig(gguf: file)
        let h = config.hiddenSize
        func matrix(_ name: String, rows: Int, columns: Int) throws -> QuantizedMatrix {
            let m = try file.matrix(named: name)
            guard m.rows == rows, m.columns == columns else {
                throw FormatError(file: url, tensor: name, "is \(m.rows) × \(m.columns), expected \(rows) × \(columns) from the metadata")
            }
            return m
        }
        /// llama.cpp stores each head's rows of Q and K interleaved (row 2i + s holds Hugging
        /// Face row s·half + i); this puts them back in rotate-half order.
        func unpermuted(_ m: QuantizedMatrix, heads: Int) -> QuantizedMatrix {
            guard config.architecture == .llama else { return m }
            let d = config.headDimension, half = d / 2
            var order = [Int](repeating: 0, count: m.rows)
            for head in 0..<heads {
                for s in 0..<2 {
                    for i in 0..<half { order[head * d + s * half + i] = head * d + 2 * i + s }
                }
            }
            return m.reorderingRows(order)
        }

        let embedding = try matrix("token_embd.weight", rows: config.vocabularySize, columns: h)
        let qWidth = config.headCount * config.headDimension, kvWidth = config.kvHeadCount * config.headDimension
        var layers: [LayerWeights] = []
        for i in 0..<config.layerCount {
            let p = "blk.\(i)."
            let qkv: QuantizedMatrix
            if file.tensor(named: p + "attn_qkv.weight") != nil {
                qkv = try matrix(p + "attn_qkv.weight", rows: config.qkvRows, columns: h)
            } else {
                qkv = try QuantizedMatrix.stackingRows([
                    unpermuted(matrix(p + "attn_q.weight", rows: qWidth, columns: h), heads: config.headCount),
                    unpermuted(matrix(p + "attn_k.weight", rows: kvWidth, columns: h), heads: config.kvHeadCount),
                    matrix(p + "attn_v.weight", rows: kvWidth, columns: h),
                ], name: p + "attn_q|attn_k|attn_v", file: url)
            }
            let gateUp: QuantizedMatrix
            if file.tensor(named: p + "ffn_gate.weight") != nil {
                gateUp = try QuantizedMatrix.stackingRows([
                    matrix(p + "ffn_gate.weight", rows: config.intermediateSize, columns: h),
                    matrix(p + "ffn_up.weight", rows: config.intermediateSize, columns: h),
                ], name: p + "ffn_gate|ffn_up", file: url)
            } else {  // phi3 stores gate | up fused as ffn_up
                gateUp = try matrix(p + "ffn_up.weight", rows: 2 * config.intermediateSize, columns: h)
            }
            layers.append(LayerWeights(
                attentionNorm: try file.vector(named: p + "attn_norm.weight", count: h),  // (hidden) Float32
                qkv: qkv,
                output: try matrix(p + "attn_output.weight", rows: h, columns: qWidth),
                mlpNorm: try file.vector(named: p + "ffn_norm.weight", count: h),  // (hidden) Float32
                gateUp: gateUp,
                down: try matrix(p + "ffn_down.weight", rows: h, columns: config.intermediateSize)))
            progress?(Double(i + 1) / Double(config.layerCount + 1))
        }
        let finalNorm = try file.vector(named: "output_norm.weight", count: h)  // (hidden) Float32
        let lmHead = config.tiedEmbeddings ? embedding : try matrix("output.weight", rows: config.vocabularySize, columns: h)
        var eos: [Int] = []
        for key in ["tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"] {
            if let id = file.metadata[key]?.intValue, !eos.contains(id) { eos.append(id) }
        }
        progress?(1)
        return Checkpoint(
            weights: ModelWeights(config: config, embedding: embedding, layers: layers, finalNorm: finalNorm, lmHead: lmHead),
            source: .gguf(file), directory: url.deletingLastPathComponent(), eosTokenIds: eos)
    }
}
