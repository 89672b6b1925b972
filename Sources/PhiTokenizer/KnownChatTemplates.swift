/// The template texts phi-gpu recognises, each tied to the format that renders it exactly.
/// Sources: Phi-3.5-mini-instruct and Phi-4-mini-instruct tokenizer_config.json, llama.cpp's
/// Phi-3 vocabulary GGUF, SmolLM2-135M-Instruct's GGUF, and the plain ChatML template.
enum KnownChatTemplates {
    static let phi3 = #"{% for message in messages %}{% if message['role'] == 'system' and message['content'] %}{{'<|system|>\#n' + message['content'] + '<|end|>\#n'}}{% elif message['role'] == 'user' %}{{'<|user|>\#n' + message['content'] + '<|end|>\#n'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\#n' + message['content'] + '<|end|>\#n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\#n' }}{% else %}{{ eos_token }}{% endif %}"#
    static let phi3Legacy = #"{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') %}{{'<|user|>' + '\#n' + message['content'] + '<|end|>' + '\#n' + '<|assistant|>' + '\#n'}}{% elif (message['role'] == 'assistant') %}{{message['content'] + '<|end|>' + '\#n'}}{% endif %}{% endfor %}"#
    static let phi4Mini = #"{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and message['tools'] is not none %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + '<|/tool|>' + '<|end|>' }}{% else %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}"#
    static let smolLM2 = #"{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\#nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\#n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\#n' + message['content'] + '<|im_end|>' + '\#n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\#n' }}{% endif %}"#
    static let chatML = #"{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"#

    /// The system turn SmolLM2's template adds when the conversation has none.
    static let smolLM2SystemPrompt = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

    static let formats: [String: ChatFormat] = [
        phi3: .phi3, phi3Legacy: .phi3Legacy, phi4Mini: .phi4Mini, smolLM2: .smolLM2, chatML: .chatML,
    ]
}
