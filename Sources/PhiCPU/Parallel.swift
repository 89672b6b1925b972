import Dispatch

/// Splits `0..<count` into about `tasks` contiguous ranges and runs `body` on each, on all cores.
/// Runs inline when there is one range, so tiny tensors pay no dispatch cost. `body` must only
/// write disjoint memory for disjoint ranges.
func parallelRanges(_ count: Int, tasks: Int, minimumPerTask: Int = 1,
                    _ body: (Range<Int>) -> Void) {
    guard count > 0 else { return }
    let taskCount = max(1, min(tasks, count / max(minimumPerTask, 1)))
    if taskCount == 1 { body(0..<count); return }
    let per = (count + taskCount - 1) / taskCount
    withoutActuallyEscaping(body) { body in
        let shared = UncheckedSendable(body)
        DispatchQueue.concurrentPerform(iterations: taskCount) { task in
            let start = task * per
            let end = min(start + per, count)
            if start < end { shared.value(start..<end) }
        }
    }
}

/// Carries a value across the concurrentPerform boundary; callers guarantee disjoint writes.
struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
