import Foundation
import PhiFormats

/// Loads an MLX / Hugging Face checkpoint directory (`config.json`, safetensors, optional
/// `generation_config.json`) of a `phi3` or `llama` model into the engine layout.
enum MLXCheckpointLoader {
    static func load(directory: URL, progress: ((Double) -> Void)?) throws -> Checkpoint {
        let configURL = directory.appendingPathComponent("config.json")
        guard FileManager.default.fileExists(atPath: configURL.path) else {
            throw FormatError(file: configURL, "is missing: an MLX checkpoint directory has config.json beside its .safetensors files")
        }
        let json = try JSONObject.read(configURL)
        let config = try ModelConfig(json: json)
        let quantization = try MLXQuantization(json: json)
        let weights = try SafetensorsCollection(directory: directory)
        let h = config.hiddenSize
        let attentionWidth = config.headCount * config.headDimension
        let kvWidth = config.kvHeadCount * config.headDimension

        func matrix(_ path: String, rows: Int, columns: Int) throws -> QuantizedMatrix {
            try weights.matrix(path, rows: rows, columns: columns, quantization: quantization?.layout(for: path))
        }
        func has(_ path: String) -> Bool { weights.tensor(named: path + ".weight") != nil }

        let embedding = try matrix("model.embed_tokens", rows: config.vocabularySize, columns: h)
        var layers: [LayerWeights] = []
        for i in 0..<config.layerCount {
            let p = "model.layers.\(i)."
            let qkv: QuantizedMatrix
            if has(p + "self_attn.qkv_proj") {
                qkv = try matrix(p + "self_attn.qkv_proj", rows: config.qkvRows, columns: h)
            } else {
                qkv = try QuantizedMatrix.stackingRows([
                    matrix(p + "self_attn.q_proj", rows: attentionWidth, columns: h),
                    matrix(p + "self_attn.k_proj", rows: kvWidth, columns: h),
                    matrix(p + "self_attn.v_proj", rows: kvWidth, columns: h),
                ], name: p + "self_attn.q_proj|k_proj|v_proj", file: directory)
            }
            let gateUp: QuantizedMatrix
            if has(p + "mlp.gate_up_proj") {
                gateUp = try matrix(p + "mlp.gate_up_proj", rows: 2 * config.intermediateSize, columns: h)
            } else {
                gateUp = try QuantizedMatrix.stackingRows([
                    matrix(p + "mlp.gate_proj", rows: config.intermediateSize, columns: h),
                    matrix(p + "mlp.up_proj", rows: config.intermediateSize, columns: h),
                ], name: p + "mlp.gate_proj|up_proj", file: directory)
            }
            layers.append(LayerWeights(
                attentionNorm: try weights.vector(p + "input_layernorm.weight", count: h),  // (hidden) Float32
                qkv: qkv,
                output: try matrix(p + "self_attn.o_proj", rows: h, columns: attentionWidth),
                mlpNorm: try weights.vector(p + "post_attention_layernorm.weight", count: h),  // (hidden) Float32
                gateUp: gateUp,
                down: try matrix(p + "mlp.down_proj", rows: h, columns: config.intermediateSize)))
            progress?(Double(i + 1) / Double(config.layerCount + 1))
        }
        let finalNorm = try weights.vector("model.norm.weight", count: h)  // (hidden) Float32
        let lmHead: QuantizedMatrix
        if config.tiedEmbeddings {
            lmHead = embedding
        } else {
            guard has("lm_head") else {
                throw FormatError(file: directory, tensor: "lm_head.weight", "is missing and config.json does not set tie_word_embeddings; the checkpoint is incomplete")
            }
            lmHead = try matrix("lm_head", rows: config.vocabularySize, columns: h)
        }
        progress?(1)
        return Checkpoint(
            weights: ModelWeights(config: config, embedding: embedding, layers: layers, finalNorm: finalNorm, lmHead: lmHead),
            source: .mlxDirectory(directory), directory: directory,
            eosTokenIds: try eosTokenIds(directory: directory, config: json))
    }
}
