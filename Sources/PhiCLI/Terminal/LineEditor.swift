import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A small line editor for a terminal in raw mode: left/right, Home/End, backspace, delete,
/// up/down through the history, Ctrl-A/E/U/K/D/C. Each character is assumed one column wide.
final class LineEditor {
    /// How reading a line ended.
    enum Result: Equatable {
        case line(String)
        /// Ctrl-C.
        case interrupted
        /// Ctrl-D on an empty line, or the end of input.
        case endOfInput
    }

    private(set) var history: [String] = []
    private let maxHistory = 500

    /// Reads one line after showing `prompt`, with the terminal in raw mode meanwhile.
    func readLine(prompt: String) -> Result {
        var saved = termios()
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { return plainReadLine(prompt: prompt) }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(IXON | ICRNL | INLCR)
        setControlCharacter(&raw, index: Int(VMIN), value: 1)
        setControlCharacter(&raw, index: Int(VTIME), value: 0)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw)
        defer { tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved) }

        var state = EditState(prompt: prompt, history: history)
        state.redraw()
        while true {
            guard let byte = readByte() else { return finish(.endOfInput) }
            switch byte {
            case 0x0D, 0x0A:  // Enter
                let line = state.text
                Console.out("\r\n")
                if !line.trimmingCharacters(in: .whitespaces).isEmpty && history.last != line {
                    history.append(line)
                    if history.count > maxHistory { history.removeFirst() }
                }
                return .line(line)
            case 0x03:  // Ctrl-C
                Console.out("^C\r\n")
                return .interrupted
            case 0x04:  // Ctrl-D: end of input on an empty line, else delete under the cursor
                if state.characters.isEmpty { return finish(.endOfInput) }
                state.deleteForward()
            case 0x01: state.cursor = 0  // Ctrl-A
            case 0x05: state.cursor = state.characters.count  // Ctrl-E
            case 0x02: state.moveLeft()  // Ctrl-B
            case 0x06: state.moveRight()  // Ctrl-F
            case 0x15:  // Ctrl-U: delete to the start
                state.characters.removeFirst(state.cursor)
                state.cursor = 0
            case 0x0B: state.characters.removeLast(state.characters.count - state.cursor)  // Ctrl-K
            case 0x7F, 0x08: state.deleteBackward()
            case 0x1B: handleEscape(&state)
            default:
                if byte >= 0x20 { state.insert(readCharacter(startingWith: byte)) }
            }
            state.redraw()
        }
    }

    private func finish(_ result: Result) -> Result {
        Console.out("\r\n")
        return result
    }

    /// Arrow keys and Home/End/Delete: `ESC [ X`, `ESC O X`, `ESC [ n ~`.
    private func handleEscape(_ state: inout EditState) {
        guard let first = readByte(), first == UInt8(ascii: "[") || first == UInt8(ascii: "O"),
              let key = readByte() else { return }
        switch key {
        case UInt8(ascii: "A"): state.historyUp()
        case UInt8(ascii: "B"): state.historyDown()
        case UInt8(ascii: "C"): state.moveRight()
        case UInt8(ascii: "D"): state.moveLeft()
        case UInt8(ascii: "H"): state.cursor = 0
        case UInt8(ascii: "F"): state.cursor = state.characters.count
        case UInt8(ascii: "0")...UInt8(ascii: "9"):
            var code = [key]
            while let next = readByte(), next != UInt8(ascii: "~") { code.append(next) }
            switch String(decoding: code, as: UTF8.self) {
            case "3": state.deleteForward()
            case "1", "7": state.cursor = 0
            case "4", "8": state.cursor = state.characters.count
            default: break
            }
        default: break
        }
    }

    /// One whole UTF-8 character whose first byte is `first`.
    private func readCharacter(startingWith first: UInt8) -> Character {
        let length = first >= 0xF0 ? 4 : first >= 0xE0 ? 3 : first >= 0xC0 ? 2 : 1
        var bytes = [first]
        while bytes.count < length, let next = readByte() { bytes.append(next) }
        return String(decoding: bytes, as: UTF8.self).first ?? "\u{FFFD}"
    }

    private func readByte() -> UInt8? {
        var byte: UInt8 = 0
        while true {
            let count = read(STDIN_FILENO, &byte, 1)
            if count == 1 { return byte }
            if count < 0 && errno == EINTR { continue }
            return nil
        }
    }

    private func plainReadLine(prompt: String) -> Result {
        Console.out(prompt)
        guard let line = Swift.readLine() else { return .endOfInput }
        return .line(line)
    }

    private func setControlCharacter(_ attributes: inout termios, index: Int, value: cc_t) {
        withUnsafeMutableBytes(of: &attributes.c_cc) { buffer in buffer[index] = value }
    }
}

/// The line being edited: its characters, the cursor, and the position in the history.
private struct EditState {
    let prompt: String
    let history: [String]
    var characters: [Character] = []
    var cursor = 0
    /// history.count while editing a new line.
    var historyIndex: Int
    /// The new line, kept while browsing the history.
    var draft: [Character] = []

    init(prompt: String, history: [String]) {
        self.prompt = prompt
        self.history = history
        historyIndex = history.count
    }

    var text: String { String(characters) }

    mutating func insert(_ character: Character) {
        characters.insert(character, at: cursor)
        cursor += 1
    }

    mutating func deleteBackward() {
        guard cursor > 0 else { return }
        characters.remove(at: cursor - 1)
        cursor -= 1
    }

    mutating func deleteForward() {
        guard cursor < characters.count else { return }
        characters.remove(at: cursor)
    }

    mutating func moveLeft() { cursor = max(cursor - 1, 0) }
    mutating func moveRight() { cursor = min(cursor + 1, characters.count) }

    mutating func historyUp() {
        guard historyIndex > 0 else { return }
        if historyIndex == history.count { draft = characters }
        historyIndex -= 1
        characters = Array(history[historyIndex])
        cursor = characters.count
    }

    mutating func historyDown() {
        guard historyIndex < history.count else { return }
        historyIndex += 1
        characters = historyIndex == history.count ? draft : Array(history[historyIndex])
        cursor = characters.count
    }

    /// Rewrites the prompt and line, then puts the terminal cursor at `cursor`.
    func redraw() {
        var output = "\r" + prompt + String(characters) + "\u{1B}[K"
        let back = characters.count - cursor
        if back > 0 { output += "\u{1B}[\(back)D" }
        Console.out(output)
    }
}
