import Foundation
import PortariaCore

/// Names the field of a number that does not fit it (2.5 or 1e23 for an `Int`).
///
/// Foundation on Linux reports that case as corrupted data with an empty coding path, so
/// the 400 could not say which field was wrong. The body is valid JSON then, and the type
/// knows what fits: each number of the body is tried alone — every other number set to 0,
/// which fits any numeric field — and the one that still fails the same way is the
/// culprit. Only on that error path, and bounded (`maxNumbers`, `maxBytes`): a hostile body
/// costs at most `maxNumbers` more decodes of at most `maxBytes`.
enum MisfitNumber {
    static let maxNumbers = 32
    static let maxBytes = 16 * 1024

    /// One step into a JSON tree; a coding key, so `HTTPError.fieldPath` spells the path.
    enum Step: Equatable, CodingKey {
        case key(String)
        case index(Int)

        var stringValue: String {
            switch self {
            case .key(let key): return key
            case .index(let index): return String(index)
            }
        }
        var intValue: Int? {
            if case .index(let index) = self { return index }
            return nil
        }
        init?(stringValue: String) { self = .key(stringValue) }
        init?(intValue: Int) { self = .index(intValue) }
    }

    /// The field, in `a.b[2].c` form, or nil when it cannot be told (too large, or no
    /// single number is to blame).
    static func field<T: Decodable>(decoding type: T.Type, from body: [UInt8]) -> String? {
        guard body.count <= maxBytes,
              let tree = try? JSONCoding.decoder().decode(JSONValue.self, from: Data(body)) else { return nil }
        var numbers: [[Step]] = []
        collectNumbers(tree, at: [], into: &numbers)
        guard !numbers.isEmpty, numbers.count <= maxNumbers else { return nil }
        let encoder = JSONEncoder()
        for path in numbers {
            guard let trial = try? encoder.encode(zeroingNumbers(tree, except: path, at: [])) else { continue }
            do {
                _ = try JSONCoding.decoder().decode(T.self, from: trial)
            } catch DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty {
                return HTTPError.fieldPath(path)
            } catch {}
        }
        return nil
    }

    /// Every number's path, objects' keys in sorted order (the answer must not depend on
    /// a dictionary's order).
    static func collectNumbers(_ value: JSONValue, at path: [Step], into paths: inout [[Step]]) {
        switch value {
        case .number: paths.append(path)
        case .array(let items):
            for (index, item) in items.enumerated() { collectNumbers(item, at: path + [.index(index)], into: &paths) }
        case .object(let members):
            for key in members.keys.sorted() { collectNumbers(members[key]!, at: path + [.key(key)], into: &paths) }
        case .null, .bool, .string: break
        }
    }

    static func zeroingNumbers(_ value: JSONValue, except kept: [Step], at path: [Step]) -> JSONValue {
        switch value {
        case .number: return path == kept ? value : .number(0)
        case .array(let items):
            return .array(items.enumerated().map { zeroingNumbers($1, except: kept, at: path + [.index($0)]) })
        case .object(let members):
            return .object(Dictionary(uniqueKeysWithValues: members.map { ($0, zeroingNumbers($1, except: kept, at: path + [.key($0)])) }))
        case .null, .bool, .string: return value
        }
    }
}
