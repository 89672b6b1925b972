/// Which files of a hub repository a model needs: configs, weights and tokenizer, nothing else
/// (no README, no PyTorch `.bin` copies, no ONNX exports).
public enum ModelFiles {
    /// Files fetched by name when the repository has them.
    public static let namedFiles: Set<String> = [
        "config.json", "generation_config.json", "model.safetensors.index.json", "tokenizer.json",
        "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja",
    ]

    /// True for the files above and for top-level `*.safetensors` weights. Files in subfolders are
    /// never needed by the checkpoints phi-gpu loads.
    public static func isNeeded(_ repositoryPath: String) -> Bool {
        guard !repositoryPath.contains("/") else { return false }
        return namedFiles.contains(repositoryPath) || repositoryPath.hasSuffix(".safetensors")
    }
}
