/// A dense square matrix in row-major order, just enough for the Durbin matrix power.
struct SquareMatrix {
    let size: Int
    private(set) var entries: [Double]

    init(size: Int) {
        self.size = size
        entries = [Double](repeating: 0, count: size * size)
    }

    static func identity(size: Int) -> SquareMatrix {
        var matrix = SquareMatrix(size: size)
        for i in 0..<size { matrix[i, i] = 1 }
        return matrix
    }

    subscript(row: Int, column: Int) -> Double {
        get { entries[row * size + column] }
        set { entries[row * size + column] = newValue }
    }

    var largestMagnitude: Double {
        entries.reduce(0) { max($0, abs($1)) }
    }

    mutating func scale(by factor: Double) {
        for index in entries.indices { entries[index] *= factor }
    }

    func multiplied(by other: SquareMatrix) -> SquareMatrix {
        var product = SquareMatrix(size: size)
        let n = size
        entries.withUnsafeBufferPointer { left in
            other.entries.withUnsafeBufferPointer { right in
                product.entries.withUnsafeMutableBufferPointer { result in
                    for i in 0..<n {
                        for k in 0..<n {
                            let factor = left[i * n + k]
                            if factor == 0 { continue }
                            for j in 0..<n { result[i * n + j] += factor * right[k * n + j] }
                        }
                    }
                }
            }
        }
        return product
    }
}
