/// What phi-gpu reads from a SPIR-V module: the size in bytes of its push-constant block and its
/// workgroup size, so pipelines can check the Swift side against the shader.
public struct SPIRVReflection: Sendable {
    /// Bytes spanned by the push-constant block's members (0 when the shader has none).
    public let pushConstantSize: Int

    /// Parses `words`; throws when they are not a SPIR-V module.
    public init(words: [UInt32], name: String) throws {
        guard words.count >= 5, words[0] == 0x0723_0203 else {
            throw VulkanError(call: "SPIR-V of \(name)", message: "not a SPIR-V module (bad magic number)")
        }
        var scalarSizes: [UInt32: Int] = [:]        // type id -> bytes (int/float)
        var vectorTypes: [UInt32: (UInt32, Int)] = [:]  // type id -> (component type, count)
        var structMembers: [UInt32: [UInt32]] = [:]  // struct id -> member type ids
        var memberOffsets: [UInt32: [Int: Int]] = [:] // struct id -> member -> offset
        var pointerTargets: [UInt32: (storage: UInt32, type: UInt32)] = [:]
        var pushConstantPointers: [UInt32] = []
        var index = 5
        while index < words.count {
            let count = Int(words[index] >> 16)
            let opcode = words[index] & 0xffff
            guard count > 0, index + count <= words.count else {
                throw VulkanError(call: "SPIR-V of \(name)", message: "truncated instruction at word \(index)")
            }
            let operands = words[(index + 1)..<(index + count)].map { $0 }
            switch opcode {
            case 21, 22:  // OpTypeInt, OpTypeFloat: result, width
                scalarSizes[operands[0]] = Int(operands[1]) / 8
            case 23:  // OpTypeVector: result, component, count
                vectorTypes[operands[0]] = (operands[1], Int(operands[2]))
            case 30:  // OpTypeStruct: result, members...
                structMembers[operands[0]] = Array(operands.dropFirst())
            case 32:  // OpTypePointer: result, storage class, type
                pointerTargets[operands[0]] = (operands[1], operands[2])
            case 59:  // OpVariable: type, result, storage class
                if operands[2] == 9 { pushConstantPointers.append(operands[0]) }
            case 72:  // OpMemberDecorate: struct, member, decoration, value
                if operands[2] == 35 { memberOffsets[operands[0], default: [:]][Int(operands[1])] = Int(operands[3]) }
            default:
                break
            }
            index += count
        }
        func size(of type: UInt32) -> Int {
            if let bytes = scalarSizes[type] { return bytes }
            if let (component, count) = vectorTypes[type] { return (scalarSizes[component] ?? 4) * count }
            if let members = structMembers[type] {
                let offsets = memberOffsets[type] ?? [:]
                return members.enumerated().map { (offsets[$0] ?? 0) + size(of: $1) }.max() ?? 0
            }
            return 0
        }
        pushConstantSize = pushConstantPointers.compactMap { pointerTargets[$0] }.map { size(of: $0.type) }.max() ?? 0
    }
}
