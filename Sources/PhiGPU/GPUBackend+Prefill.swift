import Foundation
import PhiModel
import PhiShaders
import VulkanKit

extension GPUBackend {
    /// Queues a many-token product with the tiled prefill kernels when they apply, and with
    /// `accumulator` also accumulator += out; returns false to let the caller use the general kernel.
    /// A product added into an accumulator may be split over its columns (`PrefillKernel.parts`:
    /// the number the plan estimates fastest, or by its tiles where the device does not say how
    /// many multiprocessors it has): its parts' sums are added up by the dispatch that adds them in.
    func queuePrefillMatmul(_ x: BackendTensor, rows: Range<Int>, weight: GPUMatrix, into out: BackendTensor,
                            accumulateInto accumulator: BackendTensor? = nil) throws -> Bool {
        let splittable = accumulator.map { out.columns == weight.rows && $0.columns == weight.rows } ?? false
        guard let kernel = try PrefillKernel.choose(tokens: rows.count, bits: weight.bits, columns: weight.columns, rows: weight.rows,
                                                    splittable: splittable, groupSize: weight.groupSize, device: context.device)
        else { return false }
        guard let accumulator else {
            try queuePrefillMatmul(x, rows: rows, weight: weight, into: out, kernel: kernel)
            return true
        }
        if splittable, let streamK = kernel.streamKAdd(rows: weight.rows, tokens: rows.count, columns: weight.columns,
                                                      multiprocessors: context.device.physical.multiprocessors) {
            try queuePrefillMatmul(x, rows: rows, weight: weight, into: out, kernel: kernel, streamK: streamK, accumulator: accumulator)
            return true
        }
        let parts = splittable
            ? kernel.parts(rows: weight.rows, tokens: rows.count, columns: weight.columns, groupSize: weight.groupSize,
                           multiprocessors: context.device.physical.multiprocessors)
            : 1
        guard parts > 1 else {
            try queuePrefillMatmul(x, rows: rows, weight: weight, into: out, kernel: kernel)
            try queueAdd(out, count: rows.count, into: accumulator)
            return true
        }
        if prefillPartSums.map({ $0.columns != weight.rows || $0.rows < parts * rows.count }) ?? true {
            // Commands queued with the previous buffer hold on to it until they have run.
            prefillPartSums = try gpu(try makeTensor(rows: parts * max(rows.count, 512), columns: weight.rows))
        }
        guard let sums = prefillPartSums else { throw BackendError.notPrepared }
        try queuePrefillMatmul(x, rows: rows, weight: weight, into: sums, kernel: kernel, parts: parts)
        let elements = rows.count * weight.rows
        let perInvocation = elements % 4 == 0 ? 4 : 1  // addPartsVec4: 16 bytes an access
        let pipeline = try context.pipeline(perInvocation == 4 ? ShaderLibrary.addPartsVec4 : ShaderLibrary.addParts, bindings: 3,
                                            pushConstantSize: MemoryLayout<ElementwiseConstants>.size, specialization: [256])
        try dispatch(pipeline, [BufferBinding(try gpu(accumulator).buffer), BufferBinding(sums.buffer), BufferBinding(try gpu(out).buffer)],
                     ElementwiseConstants(count: UInt32(rows.count), width: UInt32(weight.rows), offset: UInt32(parts)),
                     groups: ((elements / perInvocation + 255) / 256, 1, 1))
        return true
    }

    /// `halfInputs`, grown when needed to (rows, columns / 2) pairs of Float16.
    func halfInputs(rows: Int, columns: Int) throws -> GPUTensor {
        if (halfInputs?.buffer.byteCount ?? 0) < rows * (columns / 2) * 4 {
            // Commands queued with the smaller buffer hold on to it until they have run.
            halfInputs = try gpu(try makeTensor(rows: rows, columns: columns / 2))
        }
        guard let halves = halfInputs else { throw BackendError.notPrepared }
        return halves
    }

    /// Where a prompt's RMSNorm or SiLU gate of `count` rows and `columns` columns also writes its
    /// output as Float16 pairs, for the cooperative product that reads it next to take instead of
    /// converting it (`halfInputs`); nil where prefill products do not read Float16 (no cooperative
    /// matrices, or another kernel forced), for one-token steps, and for odd widths.
    func halfCopy(count: Int, columns: Int) throws -> GPUTensor? {
        guard writesHalfCopies, count >= PrefillKernel.minimumTokens, columns % 8 == 0 else { return nil }
        return try halfInputs(rows: count, columns: columns)
    }

    /// Notes that the command just queued wrote `tensor`'s first `rows` rows and their Float16 copy.
    func noteHalfCopy(of tensor: BackendTensor, rows: Int) {
        lastHalfCopy = QueuedHalfCopy(index: stream.queued.count - 1, tensor: tensor, rows: rows)
    }

    /// Queues the conversion of rows `rows` of x to Float16 (toHalf) into `halfInputs`, grown when
    /// needed, and returns it: (rows.count, x.columns / 2) "Float32" values, each the bits of a
    /// pair of Float16 (columns 2j, 2j + 1 in its low and high halves). Nothing is queued when the
    /// command just before wrote those rows of x and their copy there (`noteHalfCopy`): on an H200
    /// the conversions took 0.9 ms of a 34 ms pp512 pass (BENCHMARKS.md, twelfth session).
    func queueHalfConversion(_ x: BackendTensor, rows: Range<Int>) throws -> GPUTensor {
        let halves = try halfInputs(rows: rows.count, columns: x.columns)
        if let copy = lastHalfCopy, copy.index == stream.queued.count - 1, copy.tensor === x, rows == 0..<copy.rows {
            return halves
        }
        let pipeline = try context.pipeline(ShaderLibrary.toHalf, bindings: 2, pushConstantSize: MemoryLayout<ElementwiseConstants>.size,
                                            specialization: [256])
        try dispatch(pipeline, [BufferBinding(try gpu(x).buffer), BufferBinding(halves.buffer)],
                     ElementwiseConstants(count: UInt32(rows.count), width: UInt32(x.columns), offset: UInt32(rows.lowerBound * x.columns)),
                     groups: ((rows.count * x.columns / 2 + 255) / 256, 1, 1))
        return halves
    }

    /// Queues out (rows.count, out.columns) = x[rows] (rows.count, columns) · Wᵀ with `kernel`. The
    /// cooperative kernel reads x in Float16: rows `rows` are converted into `halfInputs` first.
    /// With `parts` > 1 the columns are split into that many equal shares, whose partial sums go to
    /// `parts` consecutive (rows.count, out.columns) blocks of out.
    func queuePrefillMatmul(_ x: BackendTensor, rows: Range<Int>, weight: GPUMatrix, into out: BackendTensor,
                            kernel: PrefillKernel, parts: Int = 1, streamK: (shader: ShaderBinary, workgroups: Int)? = nil,
                            accumulator: BackendTensor? = nil) throws {
        var input = try gpu(x).buffer
        var inputRow = rows.lowerBound
        if kernel.kind == .cooperativeMatrix {
            (input, inputRow) = (try queueHalfConversion(x, rows: rows).buffer, 0)
        }
        let constants = MatmulConstants(rows: UInt32(weight.rows), columns: UInt32(weight.columns), tokens: UInt32(rows.count),
                                        inputRow: UInt32(inputRow), groupSize: UInt32(weight.groupSize),
                                        outputStride: UInt32(out.columns))
        let bindings = [BufferBinding(input), BufferBinding(weight.packed), BufferBinding(weight.scales),
                        BufferBinding(weight.biases), BufferBinding(try gpu(out).buffer)]
        if parts == 1, let (shader, workgroups) = streamK ?? kernel.streamK(rows: weight.rows, tokens: rows.count,
                                                                            multiprocessors: context.device.physical.multiprocessors) {
            let (partials, counts) = try streamKBuffers(workgroups: workgroups, tiles: kernel.tiles(rows: weight.rows, tokens: rows.count),
                                                        tileValues: kernel.tileRows * kernel.tileTokens)
            var streamBindings = bindings + [BufferBinding(partials), BufferBinding(counts)]
            if let accumulator { streamBindings.append(BufferBinding(try gpu(accumulator).buffer)) }
            let pipeline = try context.pipeline(shader, bindings: streamBindings.count, pushConstantSize: MemoryLayout<MatmulConstants>.size,
                                                specialization: [1, PrefillKernel.streamMode])
            try dispatch(pipeline, streamBindings, constants, groups: (workgroups, 1, 1))
            return
        }
        let pipeline = try context.pipeline(kernel.shader, bindings: 5, pushConstantSize: MemoryLayout<MatmulConstants>.size,
                                            specialization: [UInt32(parts)])
        try dispatch(pipeline, bindings, constants,
                     groups: ((weight.rows + kernel.tileRows - 1) / kernel.tileRows,
                              (rows.count + kernel.tileTokens - 1) / kernel.tileTokens, parts))
    }

    /// The stream-K products' buffers for `workgroups` workgroups over `tiles` tiles of `tileValues`
    /// values, grown when needed: each workgroup's first and last pieces' sums and its scratch,
    /// (workgroups, 3, tileValues) Float32, and the pieces done per tile, (tiles) UInt32, zeros
    /// between dispatches.
    func streamKBuffers(workgroups: Int, tiles: Int, tileValues: Int) throws -> (partials: Buffer, counts: Buffer) {
        if (streamKPartials?.byteCount ?? 0) < workgroups * 3 * tileValues * 4 {
            // Commands queued with the smaller buffer hold on to it until they have run.
            streamKPartials = try Buffer(device: context.device, byteCount: workgroups * 3 * tileValues * 4, location: .deviceLocal,
                                         label: "stream-K partial sums")
        }
        if (streamKCounts?.byteCount ?? 0) < tiles * 4 {
            let counts = try Buffer(device: context.device, byteCount: tiles * 4, location: .deviceLocal, label: "stream-K pieces done")
            try counts.fill(0)
            streamKCounts = counts
        }
        guard let partials = streamKPartials, let counts = streamKCounts else { throw BackendError.notPrepared }
        return (partials, counts)
    }
}
