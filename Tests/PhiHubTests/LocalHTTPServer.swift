import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A tiny HTTP/1.1 server on 127.0.0.1 for tests, written on plain sockets: one thread, one
/// connection at a time, every answer closes its connection. A response can be cut off after
/// some body bytes to simulate a broken connection.
final class LocalHTTPServer: @unchecked Sendable {
    struct Request: Sendable {
        let method: String
        /// The request target, e.g. `/api/models/org/name/revision/main`.
        let path: String
        /// Header names lowercased.
        let headers: [String: String]
    }

    struct Response: Sendable {
        var status: Int
        var headers: [(String, String)] = []
        var body: [UInt8] = []
        /// Close the connection after this many body bytes (the declared length stays the full one).
        var cutAfter: Int? = nil

        static func text(_ status: Int, _ text: String, headers: [(String, String)] = []) -> Response {
            Response(status: status, headers: headers, body: Array(text.utf8))
        }
    }

    typealias Handler = @Sendable (Request) -> Response

    let port: UInt16
    private let listener: Int32
    private let handler: Handler
    private let lock = NSLock()
    private var stopped = false
    private var recorded: [Request] = []
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Every request received so far, in order.
    var requests: [Request] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    init(handler: @escaping Handler) throws {
        self.handler = handler
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerError("socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0  // any free port
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw ServerError("bind/listen on 127.0.0.1 failed: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in serve() }
        self.thread = thread
        thread.start()
    }

    /// Stops accepting and waits (at most 5 s) for the serving thread to end.
    func stop() {
        lock.lock()
        let wasStopped = stopped
        stopped = true
        lock.unlock()
        if !wasStopped { _ = finished.wait(timeout: .now() + 5) }
    }

    deinit { close(listener) }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    private func serve() {
        defer { finished.signal() }
        while !isStopped {
            var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) > 0 else { continue }
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            handle(connection)
            close(connection)
        }
    }

    private func handle(_ connection: Int32) {
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var noSignal: Int32 = 1
        #if canImport(Darwin)
            setsockopt(connection, SOL_SOCKET, SO_NOSIGPIPE, &noSignal, socklen_t(MemoryLayout<Int32>.size))
        #else
            _ = noSignal
        #endif
        guard let request = readRequest(connection) else { return }
        lock.lock()
        recorded.append(request)
        lock.unlock()
        let response = handler(request)
        var head = "HTTP/1.1 \(response.status) \(Self.reason(response.status))\r\n"
        let declaresLength = response.headers.contains { $0.0.lowercased() == "content-length" }
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        if !declaresLength { head += "Content-Length: \(response.body.count)\r\n" }
        head += "Connection: close\r\n\r\n"
        guard send(connection, Array(head.utf8)) else { return }
        if request.method != "HEAD" {
            let count = min(response.cutAfter ?? response.body.count, response.body.count)
            _ = send(connection, Array(response.body[0..<count]))
        }
        shutdown(connection, Int32(SHUT_RDWR))
    }

    private func send(_ connection: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { buffer in
                #if canImport(Darwin)
                    Darwin.send(connection, buffer.baseAddress, buffer.count, 0)
                #else
                    Glibc.send(connection, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
                #endif
            }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// Reads the request line and headers (requests here have no body); nil on error or timeout.
    private func readRequest(_ connection: Int32) -> Request? {
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let terminator: [UInt8] = Array("\r\n\r\n".utf8)
        while data.count < 65536 {
            let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return nil }
            data += chunk[0..<count]
            if data.count >= 4, data.indices.dropLast(3).contains(where: { Array(data[$0..<$0 + 4]) == terminator }) {
                break
            }
        }
        let lines = String(decoding: data, as: UTF8.self).components(separatedBy: "\r\n")
        let requestLine = lines.first?.split(separator: " ") ?? []
        guard requestLine.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Request(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers)
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 206: "Partial Content"
        case 302: "Found"
        case 307: "Temporary Redirect"
        case 401: "Unauthorized"
        case 404: "Not Found"
        case 416: "Range Not Satisfiable"
        case 500: "Internal Server Error"
        default: "Status"
        }
    }
}

struct ServerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
