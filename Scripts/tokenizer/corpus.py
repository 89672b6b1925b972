"""The tokenizer test corpus: hand-written strings plus seeded random mixtures (deterministic)."""
import random

HAND_WRITTEN = [
    "", " ", "  ", "\t", "\n", "\n\n\n", "\r\n", "\r\n\r\n", " \n \n ", "\t\t\n  \n",
    "Hello world", " Hello world", "Hello World!", "hello, world.", "HELLO WORLD", "Hello  world   again",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure you'll see they've done what we'd said; it's theirs, isn't it?",
    "I'M SURE YOU'LL SEE THEY'VE DONE WHAT WE'D SAID",
    "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'VE 'M 'LL 'D 'ſ 'x", "don'T WE'Re can'T",
    "3.14159 2718 1000000 1,234,567.89 0x1F 1e-10 -42 +7 007",
    "12345678901234567890", "١٢٣٤٥ ۱۲۳ ४५६ 一二三 ⅣⅫ ½ ¾ ²³ ①②③",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "func add(_ a: Int, _ b: Int) -> Int {\n\treturn a + b\n}\n",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }",
    "{\"name\": \"phi-gpu\", \"version\": [1, 2, 3], \"ok\": true, \"none\": null}",
    "<html><body><p class=\"x\">Hi &amp; bye</p></body></html>",
    "SELECT id, name FROM users WHERE age >= 21 ORDER BY name DESC;",
    "x = [i**2 for i in range(10) if i % 2 == 0]  # squares\n\n\n",
    "    indented with four spaces\n        and eight\n\t\tand tabs",
    "path/to/file.txt C:\\Windows\\System32 https://example.com/a?b=c&d=e#f",
    "a+b=c; a-b=d; a*b=e; a/b=f; a^b; ~a; a||b && !c",
    "!!!???...,,,;;;:::''''\"\"\"```~~~@@@###$$$%%%^^^&&&***((()))",
    "Français: déjà vu, naïve, cœur, garçon, œuvre, Ça va?",
    "Deutsch: Äpfel, Öl, Übermaß, Straße, Grüße aus München",
    "Español: ¿Dónde está la biblioteca? ¡Olé! niño, año",
    "Português: não, coração, informação, você",
    "Русский: Привет, как дела? Съешь же ещё этих мягких французских булок.",
    "Ελληνικά: Καλημέρα κόσμε, ΑΒΓΔ αβγδ",
    "العربية: مرحبا بالعالم، كيف حالك؟",
    "עברית: שלום עולם",
    "हिन्दी: नमस्ते दुनिया, आप कैसे हैं?",
    "বাংলা: আমি বাংলায় গান গাই",
    "தமிழ்: வணக்கம் உலகம்",
    "ไทย: สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่าง",
    "中文：你好，世界！我爱自然语言处理。",
    "日本語：こんにちは世界、カタカナとひらがなと漢字。",
    "한국어: 안녕하세요 세계, 반갑습니다.",
    "Tiếng Việt: Xin chào thế giới, cảm ơn bạn nhiều",
    "Türkçe: İstanbul, ığdır, şeker, çiçek, ÖĞRENCİ",
    "ქართული: გამარჯობა მსოფლიო",
    "Հայերեն: Բարեւ աշխարհ",
    "አማርኛ: ሰላም ልዑል",
    "Ελληνικά και English mixed με 中文 and русский текст 123",
    "Emoji: 😀😃😄😁 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷🇯🇵 ❤️ 🦙.cpp",
    "🦙🦙🦙 llama llama 🦙", "✅ ❌ ⚠️ ℹ️ ™ © ® ∞ ≠ ≤ ≥ √ ∑ ∫ π",
    "e\u0301 a\u0300 n\u0303 o\u0308 \u0915\u093f combining marks",
    "zero\u200bwidth\u200cjoiner\u200dmark\ufeffbom",
    "nbsp\u00a0here ideographic\u3000space line\u2028sep para\u2029sep nel\u0085x",
    "figure\u2007space thin\u2009space hair\u200aspace narrow\u202fnbsp",
    "control \x00 \x01 \x07 \x1b[31mred\x1b[0m \x1c\x1d\x1e\x1f \x7f",
    "mojibake: Ã© Ã¨ Ã¼ â€™ â€œ Ð¿Ñ€Ð¸Ð²ÐµÑ‚",
    "replacement \ufffd char and <0xE2><0x96> literal byte tokens <unk>",
    "private use \ue000\uf8ff and astral 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛 𠀀𪚥",
    "<|user|>\nWhat is 2+2?<|end|>\n<|assistant|>\n4<|end|>\n",
    "<|system|>\nYou are helpful.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\n",
    "text <|end|>   \n\n  after spaces", "<s>start</s> end </s>\n\nnext",
    "<|endoftext|><|endoftext|>", "a<|end|>b<|user|>c", " <|assistant|> x",
    "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n",
    "<|tool|>[{\"name\": \"f\"}]<|/tool|><|tool_call|>x<|/tool_call|>",
    "<|endofprompt|><|tag|><|tool_response|> <|dummy_3|>",
    "<|not a token|> <| end |> <|END|>",
    " " * 17, " " * 100 + "x", "\n" * 40, "\t" * 9 + "tabbed", " \t \t \n\n\n \t",
    "a" * 300, "ab" * 150, "1" * 64, "." * 50, "-" * 80 + "\n" + "=" * 80,
    "word " * 60, "\n\n".join(["paragraph"] * 12), "x\r\ny\rz\n", "trailing space ", "  leading",
    "CamelCaseIdentifierName snake_case_name SCREAMING_CASE kebab-case", "iPhone eBay McDonald's O'Neil",
    "URL: https://github.com/ggerganov/llama.cpp/pull/1234?tab=files", "email me@example.org, +1 (555) 010-9999",
    "$100.00 €50 £20 ¥1000 ₹500 ₿0.01", "2024-01-15T12:34:56Z 12:00 AM 1/2/2023",
    "ﬁ ﬂ ﬀ ligatures, ＦＵＬＬＷＩＤＴＨ ｆｕｌｌ, ｶﾀｶﾅ", "ǅ ǈ ǋ titlecase ᾈ ᾉ",
    "Lm modifiers: ʰ ʲ ʷ ˠ ˤ ᵃ ᵇ ᵍ ꜝ", "Ⅰ Ⅱ Ⅲ letter numbers ⅰ ⅱ",
    "ied 4 ½ months", "w048 7tuijk dsdfhu", "нещо на Български", "កាន់តែពិសេសអាចខលចេញ",
    "Hello\n\n\n\nworld", "  \n  \n", " \u00a0 \u00a0", "'", "''", "'''s", " 's", "a's", "ʼs",
]

POOLS = {
    "ascii": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:!?'\"()[]{}<>-_=+*/\\|@#$%^&~`",
    "space": " \t\n\r\u00a0\u3000\u2009",
    "latin": "àáâãäåæçèéêëìíîïðñòóôõöøùúûüýþÿœšžŁłŒĞğİı",
    "cyrillic": "абвгдежзийклмнопрстуфхцчшщъыьэюяАБВГДЕЖЗ",
    "greek": "αβγδεζηθικλμνξοπρστυφχψωΑΒΓΔΣΩάέή",
    "cjk": "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现",
    "kana": "あいうえおかきくけこさしすせそアイウエオカキクケコサシスセソー",
    "hangul": "가나다라마바사아자차카타파하한국어글",
    "arabic": "ابتثجحخدذرزسشصضطظعغفقكلمنهوي",
    "devanagari": "अआइईउऊएऐओऔकखगघचछजझटठडढणतथदधनपफबभमयरलवशषसह्ािीुूेैोौं",
    "thai": "กขคงจฉชซญดตถทนบปผพฟภมยรลวศษสหอฮะาำิีึืุูเแโใไ่้๊๋",
    "emoji": ["😀", "🎉", "🚀", "🦙", "👍🏽", "👨‍💻", "🇺🇸", "❤️", "🔥", "✨", "🤖", "🧠"],
    "marks": "\u0300\u0301\u0302\u0308\u0327\u093f\u0e31\u200d\ufe0f",
    "digits": "0123456789٠١٢٣٤٥٦٧٨٩०१२३४५",
    "odd": ["\x00", "\x1f", "\x7f", "\ufffd", "\ue000", "\U0001d518", "\U00020000", "\u2028", "\u0085", "\ufeff"],
    "specials": ["<|user|>", "<|end|>", "<|assistant|>", "<|system|>", "<s>", "</s>", "<|endoftext|>",
                 "<|im_start|>", "<|im_end|>", "<|tool|>", "<0x41>"],
}


def random_strings(count, seed=1234):
    rng = random.Random(seed)
    names = list(POOLS)
    result = []
    for _ in range(count):
        chosen = rng.sample(names, rng.randint(1, 4))
        pieces = []
        for _ in range(rng.randint(1, 40)):
            pool = POOLS[rng.choice(chosen)]
            run = rng.randint(1, 6)
            pieces.append("".join(rng.choice(pool) for _ in range(run)))
            if rng.random() < 0.5:
                pieces.append(rng.choice([" ", " ", "  ", "\n", "", "\t", ". ", ", "]))
        result.append("".join(pieces))
    return result


def corpus():
    return HAND_WRITTEN + random_strings(220)
