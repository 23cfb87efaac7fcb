import Foundation
import PortariaCore
@testable import PortariaServer
import Testing

@Suite("Metrics exposition format")
struct MetricsExpositionTests {
    @Test("a counter renders HELP, TYPE and one line per label set, label values escaped")
    func counterLines() {
        let registry = MetricsRegistry()
        let counter = registry.counter("demo_requests_total", help: "Requests\nanswered \\ counted.", labels: ["route", "status"])
        counter.increment(MetricLabels("/v1/visits/{id}", "200"))
        counter.increment(MetricLabels("/v1/visits/{id}", "200"))
        counter.increment(MetricLabels("a\"b\\c\nd", "500"), by: 0.5)
        #expect(registry.render() == """
            # HELP demo_requests_total Requests\\nanswered \\\\ counted.
            # TYPE demo_requests_total counter
            demo_requests_total{route="/v1/visits/{id}",status="200"} 2
            demo_requests_total{route="a\\"b\\\\c\\nd",status="500"} 0.5

            """)
    }

    @Test("a histogram's buckets are cumulative, end in +Inf and come with _sum and _count")
    func histogramBuckets() {
        let registry = MetricsRegistry()
        let histogram = registry.histogram("demo_seconds", help: "Durations.", labels: ["route"], bounds: [0.1, 1])
        for value in [0.05, 0.1, 0.5, 7.0] { histogram.observe(value, MetricLabels("/x")) }
        #expect(registry.render() == """
            # HELP demo_seconds Durations.
            # TYPE demo_seconds histogram
            demo_seconds_bucket{route="/x",le="0.1"} 2
            demo_seconds_bucket{route="/x",le="1"} 3
            demo_seconds_bucket{route="/x",le="+Inf"} 4
            demo_seconds_sum{route="/x"} 7.65
            demo_seconds_count{route="/x"} 4

            """)
        #expect(histogram.count(MetricLabels("/x")) == 4)
    }

    @Test("a gauge without labels is 0 before anything sets it, and moves both ways")
    func gauges() {
        let registry = MetricsRegistry()
        let gauge = registry.gauge("demo_open", help: "Open things.")
        #expect(registry.render().hasSuffix("demo_open 0\n"))
        gauge.add(3)
        gauge.add(-1)
        #expect(registry.render().hasSuffix("demo_open 2\n"))
        gauge.set(0.25)
        #expect(registry.render().hasSuffix("demo_open 0.25\n"))
    }

    @Test("label sets beyond the family's limit are counted under 'other' instead of growing the scrape")
    func seriesLimit() {
        let registry = MetricsRegistry()
        let counter = registry.counter("demo_total", help: "x", labels: ["reason"], maxSeries: 2)
        for reason in ["a", "b", "c", "d", "a"] { counter.increment(MetricLabels(reason)) }
        #expect(counter.value(MetricLabels("a")) == 2)
        #expect(counter.value(MetricLabels("b")) == 1)
        #expect(counter.value(MetricLabels("other")) == 2)
        #expect(counter.value(MetricLabels("c")) == 0)
    }

    @Test("a push reason that is not a provider's token is labelled other; an accepted push has no reason")
    func pushReasons() {
        let metrics = ServerMetrics()
        metrics.pushAttempted(provider: "apns", outcome: "token_invalid", reason: "BadDeviceToken")
        metrics.pushAttempted(provider: "apns", outcome: "retry", reason: "free text: with \"quotes\" and a colon")
        metrics.pushAttempted(provider: "fcm", outcome: "accepted", reason: "logged only")
        #expect(metrics.pushSends.value(MetricLabels("apns", "token_invalid", "BadDeviceToken")) == 1)
        #expect(metrics.pushSends.value(MetricLabels("apns", "retry", "other")) == 1)
        #expect(metrics.pushSends.value(MetricLabels("fcm", "accepted", "")) == 1)
    }

    @Test("storage failures are counted by kind; a caller's own error thrown in a transaction is not")
    func databaseErrorKinds() {
        struct NotStorage: Error {}
        let metrics = ServerMetrics()
        metrics.databaseFailed(StorageError.unavailable("down"))
        metrics.databaseFailed(StorageError.uniqueViolation("dup"))
        metrics.databaseFailed(StorageError.full("disk full"))
        metrics.databaseFailed(NotStorage())
        #expect(metrics.databaseErrors.value(MetricLabels("unavailable")) == 1)
        #expect(metrics.databaseErrors.value(MetricLabels("unique_violation")) == 1)
        #expect(metrics.databaseErrors.value(MetricLabels("full")) == 1)
        #expect(!metrics.registry.render().contains("kind=\"failed\""))
    }

    @Test("--metrics-listen takes HOST:PORT or [v6]:PORT and refuses the public listener's address")
    func listenAddress() throws {
        #expect(try MetricsListenAddress.parse("127.0.0.1:9464") == MetricsListenAddress(host: "127.0.0.1", port: 9464))
        #expect(try MetricsListenAddress.parse("[::1]:9464") == MetricsListenAddress(host: "::1", port: 9464))
        for bad in ["9464", "127.0.0.1", ":9464", "127.0.0.1:x", "127.0.0.1:70000", "::1:9464", "[::1]9464"] {
            #expect(throws: UsageError.self, "\(bad)") { try MetricsListenAddress.parse(bad) }
        }
        let address = try MetricsListenAddress.parse("127.0.0.1:8080")
        #expect(address.overlaps(host: "127.0.0.1", port: 8080))
        #expect(address.overlaps(host: "0.0.0.0", port: 8080))
        #expect(address.overlaps(host: "localhost", port: 8080))
        #expect(!address.overlaps(host: "127.0.0.1", port: 8081))
        #expect(!(try MetricsListenAddress.parse("127.0.0.1:0")).overlaps(host: "127.0.0.1", port: 0))
    }
}
