import CPhiCPU
import Foundation

/// A fixed set of long-lived threads that run one parallel region at a time, the calling thread
/// taking part as thread 0.
///
/// Decode runs ~160 short regions a token (every product, attention, the gated activation), so a
/// region must cost far less than waking sleeping threads: after a region the workers spin on a
/// generation counter for a while (`spinMicroseconds`) and only then park on a futex, so regions
/// back to back within a token start at once. Work is split statically: thread `i` gets the
/// `i`-th contiguous range of a given count (the same rows of a given matrix every call), unless
/// it is late (parked, descheduled), in which case a thread that has finished takes the range.
///
/// One region at a time: a region started while another runs (a nested call from a region's body,
/// or a second caller thread) runs inline on its caller.
final class WorkerPool: @unchecked Sendable {
    /// Threads taking part in each region, the calling thread included.
    let threadCount: Int
    private let state: PoolState

    /// How long an idle worker spins before it parks: `PHI_CPU_SPIN_US` (read once), else 1 ms,
    /// longer than the gaps between the regions of a decode step and between steps.
    static let defaultSpinMicroseconds: Int = {
        getenv("PHI_CPU_SPIN_US").flatMap { Int(String(cString: $0)) }.map { max(0, $0) } ?? 1000
    }()

    /// Ranges per thread in `parallelRanges`: `PHI_CPU_SPLITS` (read once), else 4.
    static let defaultSplitsPerThread: Int = {
        getenv("PHI_CPU_SPLITS").flatMap { Int(String(cString: $0)) }.map { max(1, $0) } ?? 4
    }()

    /// Starts `threads - 1` worker threads (none for one thread).
    init(threads: Int, spinMicroseconds: Int = WorkerPool.defaultSpinMicroseconds) {
        threadCount = max(1, threads)
        state = PoolState(threads: threadCount, spinNanoseconds: UInt64(max(0, spinMicroseconds)) * 1000)
        for index in 1..<max(threadCount, 1) {
            let state = state
            let thread = Thread { state.workerLoop(index: index) }
            thread.name = "phi-cpu-\(index)"
            thread.start()
        }
    }

    deinit { state.stop() }

    /// Runs `body(task)` for every task in `0..<tasks` and returns when all have finished. Thread
    /// `i` runs the `i`-th contiguous block of tasks (tasks × i / threads up to tasks × (i + 1) /
    /// threads) in order, except tasks it has not started by the time another thread runs out of
    /// work (it may be parked, descheduled or slower): the idle thread takes those. Inline when
    /// there is one task or one thread.
    func run(tasks: Int, _ body: (Int) -> Void) {
        guard tasks > 0 else { return }
        guard tasks > 1, threadCount > 1, state.begin() else {
            for task in 0..<tasks { body(task) }
            return
        }
        withoutActuallyEscaping(body) { body in
            state.runRegion(tasks: tasks, body: body)
        }
    }

    /// Splits `0..<count` into at most `splitsPerThread × threadCount` contiguous ranges of at least
    /// `minimumPerTask` and runs `body` on each, thread `i` taking the `i`-th contiguous share (see
    /// `run`; the splits let threads that finish early help a late one). Range bounds are multiples
    /// of `granularity` (except the end). Runs inline when there is one range, so tiny work pays no
    /// dispatch cost. `body` must only write disjoint memory for disjoint ranges.
    func parallelRanges(_ count: Int, minimumPerTask: Int = 1, granularity: Int = 1,
                        splitsPerThread: Int = WorkerPool.defaultSplitsPerThread, _ body: (Range<Int>) -> Void) {
        guard count > 0 else { return }
        let tasks = max(1, min(threadCount * max(splitsPerThread, 1), count / max(minimumPerTask, 1)))
        if tasks == 1 { body(0..<count); return }
        let step = max(granularity, 1)
        func bound(_ task: Int) -> Int { task >= tasks ? count : min(count, count * task / tasks / step * step) }
        run(tasks: tasks) { task in
            let range = bound(task)..<bound(task + 1)
            if !range.isEmpty { body(range) }
        }
    }
}

/// What the pool's threads share: the control words and the task cursors (each on its own cache
/// line) and the current region.
///
/// Thread `i` claims the tasks of its block in order by bumping its cursor; once done it bumps the
/// other threads' cursors too, so a task whose thread is late goes to whoever is free. Workers may
/// read the region only between `open` turning 1 and, after the last task finished, back to 0;
/// `active` counts those inside, and the region is cleared once it is closed and none are.
private final class PoolState: @unchecked Sendable {
    /// Regions published so far; workers wait for it to change.
    private let generation: UnsafeMutablePointer<UInt32>
    /// Workers parked on `generation`.
    private let generationSleepers: UnsafeMutablePointer<UInt32>
    /// Tasks of the current region not finished yet.
    private let remaining: UnsafeMutablePointer<UInt32>
    /// The caller, when parked on `remaining`.
    private let remainingSleepers: UnsafeMutablePointer<UInt32>
    /// Workers inside the current region.
    private let active: UnsafeMutablePointer<UInt32>
    /// 1 while the region may be read.
    private let open: UnsafeMutablePointer<UInt32>
    /// 1 while a region runs (one at a time).
    private let busy: UnsafeMutablePointer<UInt32>
    /// 1 once the pool is gone: workers return.
    private let stopping: UnsafeMutablePointer<UInt32>
    private let words: UnsafeMutableRawPointer
    /// (threads) one cache line each: how many tasks of thread i's block have been claimed.
    private let cursors: UnsafeMutableRawPointer
    private let threads: Int
    /// The current region: written while closed and no worker is inside.
    private var region: Region?
    private let spinNanoseconds: UInt64

    private struct Region {
        let tasks: Int
        let body: (Int) -> Void
    }

    init(threads: Int, spinNanoseconds: UInt64) {
        self.spinNanoseconds = spinNanoseconds
        let lines = 8
        let words = UnsafeMutableRawPointer.allocate(byteCount: lines * 64, alignment: 64)
        words.initializeMemory(as: UInt8.self, repeating: 0, count: lines * 64)
        func word(_ line: Int) -> UnsafeMutablePointer<UInt32> {
            (words + line * 64).assumingMemoryBound(to: UInt32.self)
        }
        self.words = words
        (generation, generationSleepers, remaining, remainingSleepers) = (word(0), word(1), word(2), word(3))
        (active, open, busy, stopping) = (word(4), word(5), word(6), word(7))
        self.threads = max(threads, 1)
        cursors = UnsafeMutableRawPointer.allocate(byteCount: self.threads * 64, alignment: 64)
        cursors.initializeMemory(as: UInt8.self, repeating: 0, count: self.threads * 64)
    }

    deinit {
        words.deallocate()
        cursors.deallocate()
    }

    private func cursor(_ thread: Int) -> UnsafeMutablePointer<UInt32> {
        (cursors + thread * 64).assumingMemoryBound(to: UInt32.self)
    }

    /// Thread `thread`'s block of tasks: contiguous, the same for a given task count every region.
    private func block(_ thread: Int, tasks: Int) -> Range<Int> {
        (thread * tasks / threads)..<((thread + 1) * tasks / threads)
    }

    /// Claims the pool for one region; false when one is already running.
    func begin() -> Bool { phi_cpu_atomic_exchange_if(busy, 0, 1) != 0 }

    /// Publishes a region, runs the caller's tasks (and any not yet claimed), waits for the rest,
    /// then closes the region, waits for the workers inside to leave and releases the pool.
    func runRegion(tasks: Int, body: @escaping (Int) -> Void) {
        for thread in 0..<threads { phi_cpu_atomic_store(cursor(thread), 0) }
        region = Region(tasks: tasks, body: body)
        phi_cpu_atomic_store(remaining, UInt32(tasks))
        phi_cpu_atomic_store(open, 1)
        _ = phi_cpu_publish(generation, generationSleepers)
        runTasks(thread: 0)
        phi_cpu_wait_until_zero(remaining, remainingSleepers, spinNanoseconds)
        phi_cpu_atomic_store(open, 0)
        while phi_cpu_atomic_load(active) != 0 { sched_yield() }  // at most a few claim checks left
        region = nil  // drops the body before withoutActuallyEscaping checks it did not escape
        phi_cpu_atomic_store(busy, 0)
    }

    /// A worker thread's life: wait for a region (spin, then park), join it while open, repeat.
    func workerLoop(index: Int) {
        var seen: UInt32 = 0  // not loaded: a region published before this thread started still counts
        while true {
            var now = phi_cpu_spin_while_equal(generation, seen, spinNanoseconds)
            if now == seen {
                phi_cpu_park_while_equal(generation, seen, generationSleepers)
                now = phi_cpu_atomic_load(generation)
            }
            seen = now
            if phi_cpu_atomic_load(stopping) != 0 { return }
            _ = phi_cpu_atomic_add(active, 1)
            if phi_cpu_atomic_load(open) != 0 { runTasks(thread: index) }
            _ = phi_cpu_atomic_add(active, UInt32.max)  // − 1
        }
    }

    /// Runs thread `thread`'s own block of tasks, then helps the others with theirs (tasks their
    /// threads have not claimed yet). The copy of the body is released before the caller leaves.
    @inline(never)
    private func runTasks(thread: Int) {
        guard let region else { return }
        var done: UInt32 = 0
        for offset in 0..<threads {
            let owner = (thread + offset) % threads
            let tasks = block(owner, tasks: region.tasks)
            while true {
                let task = tasks.lowerBound + Int(phi_cpu_atomic_add(cursor(owner), 1))
                guard task < tasks.upperBound else { break }
                region.body(task)
                done += 1
            }
        }
        if done > 0 { phi_cpu_finish(remaining, done, remainingSleepers) }
    }

    /// Tells the workers to return (they hold this state until they do).
    func stop() {
        phi_cpu_atomic_store(stopping, 1)
        _ = phi_cpu_publish(generation, generationSleepers)
    }
}
