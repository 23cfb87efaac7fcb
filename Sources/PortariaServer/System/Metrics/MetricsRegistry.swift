import Foundation
import PortariaCore

/// Up to three label values of one sample. A fixed-size key (not an array) so that
/// recording a sample allocates nothing: the strings are ones the caller already holds,
/// and short ones (a status code) are stored inline.
public struct MetricLabels: Hashable, Sendable {
    public var first: String
    public var second: String
    public var third: String

    public init(_ first: String = "", _ second: String = "", _ third: String = "") {
        (self.first, self.second, self.third) = (first, second, third)
    }

    subscript(index: Int) -> String {
        switch index {
        case 0: return first
        case 1: return second
        default: return third
        }
    }
}

/// One metric family with label names fixed when it is registered.
protocol MetricFamily: Sendable {
    var name: String { get }
    /// The family's `# HELP`, `# TYPE` and sample lines.
    func render(into text: inout String)
}

/// What a family of one value per label set is, as its `# TYPE` line says.
public protocol ScalarMetricKind: Sendable {
    static var typeName: String { get }
}

/// Counters (`*_total`): only go up.
public enum CounterKind: ScalarMetricKind { public static let typeName = "counter" }
/// Gauges: set at scrape time, or moved up and down as things open and close.
public enum GaugeKind: ScalarMetricKind { public static let typeName = "gauge" }

public typealias CounterFamily = ScalarFamily<CounterKind>
public typealias GaugeFamily = ScalarFamily<GaugeKind>

/// One value per label set. Recording takes one lock and a hash lookup.
public final class ScalarFamily<Kind: ScalarMetricKind>: MetricFamily {
    let name: String
    let help: String
    let labelNames: [String]
    private let values: Locked<[MetricLabels: Double]>
    /// Label sets beyond this are folded into one whose values are all `other`: a
    /// provider's free-text reason must not grow the scrape without bound.
    let maxSeries: Int

    init(name: String, help: String, labelNames: [String], maxSeries: Int = .max) {
        precondition(labelNames.count <= 3, "at most three labels")
        (self.name, self.help, self.labelNames, self.maxSeries) = (name, help, labelNames, maxSeries)
        // A gauge without labels exists from the start (0), so an alert can see it.
        values = Locked(Kind.self == GaugeKind.self && labelNames.isEmpty ? [MetricLabels(): 0] : [:])
    }

    /// The current value of one series (tests).
    public func value(_ labels: MetricLabels = MetricLabels()) -> Double { values.current[labels] ?? 0 }

    /// Adds `amount` to the series of `labels`, or to the overflow series when `maxSeries`
    /// label sets exist already.
    fileprivate func add(_ amount: Double, to labels: MetricLabels) {
        values.withLock { values in
            if values[labels] == nil && values.count >= maxSeries {
                values[MetricLabels(overflowValue(0), overflowValue(1), overflowValue(2)), default: 0] += amount
            } else {
                values[labels, default: 0] += amount
            }
        }
    }

    fileprivate func set(_ value: Double, at labels: MetricLabels) { values.withLock { $0[labels] = value } }

    private func overflowValue(_ index: Int) -> String { index < labelNames.count ? "other" : "" }

    func render(into text: inout String) {
        MetricsText.header(name: name, help: help, type: Kind.typeName, into: &text)
        for (labels, value) in values.current.sorted(by: { MetricsText.order($0.key, $1.key) }) {
            MetricsText.sample(name, labelNames: labelNames, labels, value: value, into: &text)
        }
    }
}

extension ScalarFamily where Kind == CounterKind {
    /// Adds `amount` (≥ 0) to the series of `labels`.
    public func increment(_ labels: MetricLabels = MetricLabels(), by amount: Double = 1) { add(amount, to: labels) }
}

extension ScalarFamily where Kind == GaugeKind {
    public func set(_ value: Double, _ labels: MetricLabels = MetricLabels()) { set(value, at: labels) }
    public func add(_ amount: Double, _ labels: MetricLabels = MetricLabels()) { add(amount, to: labels) }
}

/// A histogram per label set: cumulative buckets at render, plain counts when recording.
public final class HistogramFamily: MetricFamily {
    let name: String
    let help: String
    let labelNames: [String]
    /// Upper bounds, ascending; `+Inf` is implied.
    let bounds: [Double]
    struct Series {
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }
    private let series = Locked<[MetricLabels: Series]>([:])

    init(name: String, help: String, labelNames: [String], bounds: [Double]) {
        precondition(labelNames.count <= 3 && !labelNames.contains("le"), "at most three labels, none called le")
        precondition(!bounds.isEmpty && zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "ascending bounds")
        (self.name, self.help, self.labelNames, self.bounds) = (name, help, labelNames, bounds)
    }

    /// Records one observation (seconds, for the durations here).
    public func observe(_ value: Double, _ labels: MetricLabels = MetricLabels()) {
        // The bucket is found before the lock is taken (a handful of comparisons).
        var bucket = bounds.count
        for (index, bound) in bounds.enumerated() where value <= bound {
            bucket = index
            break
        }
        let size = bounds.count + 1
        // One lookup, updated in place (three lookups cost twice as much).
        series.withLock { series in
            Self.record(&series[labels, default: Series(counts: Array(repeating: 0, count: size))], bucket: bucket, value: value)
        }
    }

    private static func record(_ series: inout Series, bucket: Int, value: Double) {
        series.counts[bucket] += 1
        series.sum += value
        series.count += 1
    }

    /// Observations of one series so far (tests).
    public func count(_ labels: MetricLabels = MetricLabels()) -> UInt64 { series.current[labels]?.count ?? 0 }

    func render(into text: inout String) {
        MetricsText.header(name: name, help: help, type: "histogram", into: &text)
        for (labels, series) in series.current.sorted(by: { MetricsText.order($0.key, $1.key) }) {
            var cumulative: UInt64 = 0
            for (index, count) in series.counts.enumerated() {
                cumulative += count
                let le = index < bounds.count ? MetricsText.number(bounds[index]) : "+Inf"
                MetricsText.sample(name + "_bucket", labelNames: labelNames, labels, extra: ("le", le),
                                   value: Double(cumulative), into: &text)
            }
            MetricsText.sample(name + "_sum", labelNames: labelNames, labels, value: series.sum, into: &text)
            MetricsText.sample(name + "_count", labelNames: labelNames, labels, value: Double(series.count), into: &text)
        }
    }
}

/// The families of one process, rendered in registration order as Prometheus text
/// exposition format 0.0.4.
public final class MetricsRegistry: Sendable {
    private let families = Locked<[any MetricFamily]>([])

    public init() {}

    /// The `Content-Type` of `render()`.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public func counter(_ name: String, help: String, labels: [String] = [], maxSeries: Int = 1000) -> CounterFamily {
        register(CounterFamily(name: name, help: help, labelNames: labels, maxSeries: maxSeries))
    }

    public func gauge(_ name: String, help: String, labels: [String] = []) -> GaugeFamily {
        register(GaugeFamily(name: name, help: help, labelNames: labels))
    }

    public func histogram(_ name: String, help: String, labels: [String] = [], bounds: [Double]) -> HistogramFamily {
        register(HistogramFamily(name: name, help: help, labelNames: labels, bounds: bounds))
    }

    private func register<Family: MetricFamily>(_ family: Family) -> Family {
        precondition(MetricsText.isValidName(family.name), "invalid metric name \(family.name)")
        families.withLock { families in
            precondition(!families.contains { $0.name == family.name }, "metric \(family.name) registered twice")
            families.append(family)
        }
        return family
    }

    public func render() -> String {
        var text = ""
        for family in families.current { family.render(into: &text) }
        return text
    }
}

/// The text format's spelling of names, label values and numbers.
enum MetricsText {
    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, !(first >= "0" && first <= "9") else { return false }
        return name.unicodeScalars.allSatisfy { scalar in
            (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z") || (scalar >= "0" && scalar <= "9")
                || scalar == "_" || scalar == ":"
        }
    }

    static func header(name: String, help: String, type: String, into text: inout String) {
        text += "# HELP \(name) \(escape(help, quotes: false))\n# TYPE \(name) \(type)\n"
    }

    static func sample(_ name: String, labelNames: [String], _ labels: MetricLabels, extra: (String, String)? = nil,
                       value: Double, into text: inout String) {
        text += name
        if !labelNames.isEmpty || extra != nil {
            var pairs: [String] = labelNames.indices.map { "\(labelNames[$0])=\"\(escape(labels[$0], quotes: true))\"" }
            if let (key, value) = extra { pairs.append("\(key)=\"\(value)\"") }
            text += "{" + pairs.joined(separator: ",") + "}"
        }
        text += " " + number(value) + "\n"
    }

    /// `\` and newline always; `"` inside label values too (format 0.0.4).
    static func escape(_ text: String, quotes: Bool) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\"" where quotes: out += "\\\""
            default: out.append(character)
            }
        }
        return out
    }

    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }

    static func order(_ a: MetricLabels, _ b: MetricLabels) -> Bool {
        (a.first, a.second, a.third) < (b.first, b.second, b.third)
    }
}
