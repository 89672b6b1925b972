import Foundation
import XCTest
@testable import PhiCPU

/// `WorkerPool`: every index covered once, static ranges, nested and concurrent regions, teardown.
final class WorkerPoolTests: XCTestCase {
    /// Counts how often each index of `0..<count` was visited and records the ranges.
    private func visit(_ pool: WorkerPool, count: Int, minimumPerTask: Int = 1, granularity: Int = 1,
                       splitsPerThread: Int = WorkerPool.defaultSplitsPerThread)
        -> (visits: [Int], ranges: [Range<Int>]) {
        let visits = UnsafeMutableBufferPointer<Int>.allocate(capacity: max(count, 1))  // (count)
        visits.initialize(repeating: 0)
        defer { visits.deallocate() }
        let lock = NSLock()
        var ranges: [Range<Int>] = []
        pool.parallelRanges(count, minimumPerTask: minimumPerTask, granularity: granularity,
                            splitsPerThread: splitsPerThread) { range in
            for i in range { visits[i] += 1 }
            lock.withLock { ranges.append(range) }
        }
        return (Array(visits.prefix(count)), ranges.sorted { $0.lowerBound < $1.lowerBound })
    }

    func testEveryIndexOnceOverManyRegions() {
        for threads in [1, 2, 3, 5] {
            let pool = WorkerPool(threads: threads)
            for count in [0, 1, 2, 7, 16, 100, 1000, 4097] {
                for granularity in [1, 16] {
                    let (visits, ranges) = visit(pool, count: count, granularity: granularity)
                    XCTAssertEqual(visits, [Int](repeating: 1, count: count), "threads \(threads) count \(count)")
                    XCTAssertLessThanOrEqual(ranges.count, threads * WorkerPool.defaultSplitsPerThread)
                    for range in ranges.dropFirst() {
                        XCTAssertEqual(range.lowerBound % granularity, 0, "threads \(threads) count \(count)")
                    }
                }
            }
        }
    }

    func testSameRangesEveryCallAndMinimumPerTask() {
        let pool = WorkerPool(threads: 4)
        let first = visit(pool, count: 3072, granularity: 16).ranges
        XCTAssertEqual(first.count, 4 * WorkerPool.defaultSplitsPerThread)
        for _ in 0..<50 { XCTAssertEqual(visit(pool, count: 3072, granularity: 16).ranges, first) }
        XCTAssertEqual(visit(pool, count: 20, minimumPerTask: 8).ranges.count, 2)
        XCTAssertEqual(visit(WorkerPool(threads: 2), count: 100, splitsPerThread: 1).ranges, [0..<50, 50..<100])
        XCTAssertEqual(visit(pool, count: 7, minimumPerTask: 8).ranges, [0..<7])
    }

    func testRunCoversMoreTasksThanThreads() {
        let pool = WorkerPool(threads: 3)
        let hits = UnsafeMutableBufferPointer<Int>.allocate(capacity: 10)  // (tasks)
        hits.initialize(repeating: 0)
        defer { hits.deallocate() }
        pool.run(tasks: 10) { hits[$0] += 1 }
        XCTAssertEqual(Array(hits), [Int](repeating: 1, count: 10))
    }

    /// A region started from inside a region runs inline instead of waiting for itself.
    func testNestedRegionRunsInline() {
        let pool = WorkerPool(threads: 2)
        let (visits, _) = visit(pool, count: 64)
        XCTAssertEqual(visits.reduce(0, +), 64)
        let total = UnsafeMutableBufferPointer<Int>.allocate(capacity: 2)  // (outer ranges)
        total.initialize(repeating: 0)
        defer { total.deallocate() }
        pool.parallelRanges(2, splitsPerThread: 1) { outer in
            pool.parallelRanges(100) { inner in total[outer.lowerBound] += inner.count }
        }
        XCTAssertEqual(Array(total), [100, 100])
    }

    /// Regions from several threads at once: each runs (in the pool or inline) and covers its work.
    func testConcurrentCallers() {
        let pool = WorkerPool(threads: 2)
        let sums = UnsafeMutableBufferPointer<Int>.allocate(capacity: 4)  // (callers)
        sums.initialize(repeating: 0)
        defer { sums.deallocate() }
        let shared = UncheckedBox(sums)
        DispatchQueue.concurrentPerform(iterations: 4) { caller in
            for _ in 0..<200 {
                let counts = UnsafeMutableBufferPointer<Int>.allocate(capacity: 2)  // (ranges)
                counts.initialize(repeating: 0)
                pool.parallelRanges(1000, minimumPerTask: 500) { range in counts[range.lowerBound / 500] = range.count }
                shared.value[caller] += counts[0] + counts[1]
                counts.deallocate()
            }
        }
        XCTAssertEqual(Array(sums), [Int](repeating: 200_000, count: 4))
    }

    /// Pools come and go (one per backend): workers of a dropped pool stop, parked or spinning.
    func testPoolsComeAndGo() {
        for spin in [0, 1000] {
            for _ in 0..<20 {
                let pool = WorkerPool(threads: 3, spinMicroseconds: spin)
                XCTAssertEqual(visit(pool, count: 30).visits.reduce(0, +), 30)
            }
        }
        let parked = WorkerPool(threads: 2, spinMicroseconds: 0)
        usleep(20_000)  // the worker parks
        XCTAssertEqual(visit(parked, count: 30).visits.reduce(0, +), 30)
    }
}

private struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
