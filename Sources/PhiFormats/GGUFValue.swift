/// One GGUF metadata value (the 13 GGUF value types; arrays hold values of one type).
public enum GGUFValue: Sendable {
    case uint8(UInt8), int8(Int8), uint16(UInt16), int16(Int16), uint32(UInt32), int32(Int32)
    case float32(Float), bool(Bool), string(String), array([GGUFValue])
    case uint64(UInt64), int64(Int64), float64(Double)
}

extension GGUFValue {
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// Any integer type as Int (nil if it does not fit).
    public var intValue: Int? {
        switch self {
        case .uint8(let v): return Int(v)
        case .int8(let v): return Int(v)
        case .uint16(let v): return Int(v)
        case .int16(let v): return Int(v)
        case .uint32(let v): return Int(v)
        case .int32(let v): return Int(v)
        case .uint64(let v): return Int(exactly: v)
        case .int64(let v): return Int(v)
        default: return nil
        }
    }

    /// A float, or an integer read as a float.
    public var floatValue: Float? {
        switch self {
        case .float32(let v): return v
        case .float64(let v): return Float(v)
        default: return intValue.map(Float.init)
        }
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    public var arrayValue: [GGUFValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    /// An array of strings (nil if it is not an array or holds anything else).
    public var stringArray: [String]? {
        guard case .array(let a) = self else { return nil }
        var result: [String] = []
        result.reserveCapacity(a.count)
        for element in a {
            guard case .string(let s) = element else { return nil }
            result.append(s)
        }
        return result
    }

    /// An array of numbers as floats (nil if it is not an array of numbers).
    public var floatArray: [Float]? {
        guard case .array(let a) = self else { return nil }
        var result: [Float] = []
        result.reserveCapacity(a.count)
        for element in a {
            guard let f = element.floatValue else { return nil }
            result.append(f)
        }
        return result
    }

    /// An array of integers (nil if it is not an array of integers).
    public var intArray: [Int]? {
        guard case .array(let a) = self else { return nil }
        var result: [Int] = []
        result.reserveCapacity(a.count)
        for element in a {
            guard let i = element.intValue else { return nil }
            result.append(i)
        }
        return result
    }
}
