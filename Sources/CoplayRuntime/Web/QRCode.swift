/// A QR code (ISO/IEC 18004) of bytes, for an invitation a phone's camera can read off a
/// terminal: byte mode, error correction level M (15% of the code may be damaged), the smallest
/// version (1–40) that holds the text, the mask with the least penalty. Written after Project
/// Nayuki's reference implementation of the standard.
public struct QRCode: Sendable {
    public let version: Int
    public let size: Int
    /// modules[y][x], true for dark.
    public private(set) var modules: [[Bool]]
    private var isFunction: [[Bool]]

    public enum Failure: Error, Equatable { case tooLong(bytes: Int, max: Int) }

    /// Level M's error correction codewords per block and blocks, by version (index 0 unused).
    static let eccPerBlock: [Int] = [
        -1, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28,
        28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28,
    ]
    static let blocks: [Int] = [
        -1, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29,
        31, 33, 35, 37, 38, 40, 43, 45, 47, 49,
    ]
    /// Level M's two format bits.
    static let levelBits = 0

    public init(bytes text: [UInt8]) throws(Failure) {
        // The smallest version whose data codewords hold mode, count and the bytes.
        var chosen = 0
        for version in 1...40 {
            let countBits = version <= 9 ? 8 : 16
            if 4 + countBits + 8 * text.count <= 8 * Self.dataCodewords(version) {
                chosen = version
                break
            }
        }
        guard chosen > 0 else { throw .tooLong(bytes: text.count, max: Self.dataCodewords(40) - 3) }
        version = chosen
        size = 4 * chosen + 17
        modules = Array(repeating: Array(repeating: false, count: size), count: size)
        isFunction = modules

        var bits: [Bool] = []
        func append(_ value: Int, _ count: Int) {
            for i in stride(from: count - 1, through: 0, by: -1) { bits.append((value >> i) & 1 == 1) }
        }
        append(0b0100, 4)
        append(text.count, version <= 9 ? 8 : 16)
        for byte in text { append(Int(byte), 8) }
        let capacity = 8 * Self.dataCodewords(version)
        append(0, min(4, capacity - bits.count))
        append(0, (8 - bits.count % 8) % 8)
        var pad = 0xEC
        while bits.count < capacity {
            append(pad, 8)
            pad ^= 0xEC ^ 0x11
        }
        var data: [UInt8] = []
        for index in stride(from: 0, to: bits.count, by: 8) {
            data.append(bits[index..<index + 8].reduce(0) { $0 << 1 | ($1 ? 1 : 0) })
        }

        drawFunctionPatterns()
        drawCodewords(interleaved(data))
        var best = (mask: 0, penalty: Int.max)
        for mask in 0..<8 {
            applyMask(mask)
            drawFormatBits(mask)
            let penalty = self.penalty()
            if penalty < best.penalty { best = (mask, penalty) }
            applyMask(mask)  // undoes it
        }
        applyMask(best.mask)
        drawFormatBits(best.mask)
    }

    // MARK: Capacity

    static func rawDataModules(_ version: Int) -> Int {
        var result = (16 * version + 128) * version + 64
        if version >= 2 {
            let alignments = version / 7 + 2
            result -= (25 * alignments - 10) * alignments - 55
            if version >= 7 { result -= 36 }
        }
        return result
    }

    static func dataCodewords(_ version: Int) -> Int {
        rawDataModules(version) / 8 - eccPerBlock[version] * blocks[version]
    }

    // MARK: Error correction

    /// The data split into blocks, each followed by its Reed–Solomon codewords, interleaved.
    func interleaved(_ data: [UInt8]) -> [UInt8] {
        let count = Self.blocks[version]
        let eccLength = Self.eccPerBlock[version]
        let raw = Self.rawDataModules(version) / 8
        let shortBlocks = count - raw % count
        let shortLength = raw / count
        let divisor = Self.divisor(degree: eccLength)
        var blocks: [[UInt8]] = []
        var offset = 0
        for index in 0..<count {
            let length = shortLength - eccLength + (index < shortBlocks ? 0 : 1)
            var block = Array(data[offset..<offset + length])
            offset += length
            let ecc = Self.remainder(block, divisor)
            if index < shortBlocks { block.append(0) }
            blocks.append(block + ecc)
        }
        var result: [UInt8] = []
        for column in 0..<blocks[0].count {
            for (index, block) in blocks.enumerated() where column != shortLength - eccLength || index >= shortBlocks {
                result.append(block[column])
            }
        }
        return result
    }

    static func multiply(_ x: UInt8, _ y: UInt8) -> UInt8 {
        var z = 0
        for i in stride(from: 7, through: 0, by: -1) {
            z = (z << 1) ^ ((z >> 7) * 0x11D)
            z ^= Int((y >> UInt8(i)) & 1) * Int(x)
        }
        return UInt8(z)
    }

    static func divisor(degree: Int) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: degree)
        result[degree - 1] = 1
        var root: UInt8 = 1
        for _ in 0..<degree {
            for j in 0..<degree {
                result[j] = multiply(result[j], root)
                if j + 1 < degree { result[j] ^= result[j + 1] }
            }
            root = multiply(root, 2)
        }
        return result
    }

    static func remainder(_ data: [UInt8], _ divisor: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: divisor.count)
        for byte in data {
            let factor = byte ^ result.removeFirst()
            result.append(0)
            for i in 0..<result.count { result[i] ^= multiply(divisor[i], factor) }
        }
        return result
    }

    // MARK: Drawing

    mutating func set(_ x: Int, _ y: Int, _ dark: Bool) {
        modules[y][x] = dark
        isFunction[y][x] = true
    }

    mutating func drawFunctionPatterns() {
        for i in 0..<size {
            set(6, i, i % 2 == 0)
            set(i, 6, i % 2 == 0)
        }
        for (cx, cy) in [(3, 3), (size - 4, 3), (3, size - 4)] {
            for dy in -4...4 {
                for dx in -4...4 where (0..<size).contains(cx + dx) && (0..<size).contains(cy + dy) {
                    let distance = max(abs(dx), abs(dy))
                    set(cx + dx, cy + dy, distance != 2 && distance != 4)
                }
            }
        }
        let positions = alignmentPositions()
        for (i, x) in positions.enumerated() {
            for (j, y) in positions.enumerated() {
                let corner =
                    (i == 0 && j == 0) || (i == 0 && j == positions.count - 1) || (i == positions.count - 1 && j == 0)
                guard !corner else { continue }
                for dy in -2...2 { for dx in -2...2 { set(x + dx, y + dy, max(abs(dx), abs(dy)) != 1) } }
            }
        }
        drawFormatBits(0)  // reserves the area; drawn for real after the mask is chosen
        if version >= 7 {
            var remainder = version
            for _ in 0..<12 { remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25) }
            let bits = version << 12 | remainder
            for i in 0..<18 {
                let dark = (bits >> i) & 1 == 1
                let a = size - 11 + i % 3
                let b = i / 3
                set(a, b, dark)
                set(b, a, dark)
            }
        }
    }

    func alignmentPositions() -> [Int] {
        guard version > 1 else { return [] }
        let count = version / 7 + 2
        let step = (version * 8 + count * 3 + 5) / (count * 4 - 4) * 2
        var result = [6]
        var position = size - 7
        while result.count < count {
            result.insert(position, at: 1)
            position -= step
        }
        return result
    }

    mutating func drawFormatBits(_ mask: Int) {
        let data = Self.levelBits << 3 | mask
        var remainder = data
        for _ in 0..<10 { remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537) }
        let bits = (data << 10 | remainder) ^ 0x5412
        func bit(_ i: Int) -> Bool { (bits >> i) & 1 == 1 }
        for i in 0...5 { set(8, i, bit(i)) }
        set(8, 7, bit(6))
        set(8, 8, bit(7))
        set(7, 8, bit(8))
        for i in 9..<15 { set(14 - i, 8, bit(i)) }
        for i in 0..<8 { set(size - 1 - i, 8, bit(i)) }
        for i in 8..<15 { set(8, size - 15 + i, bit(i)) }
        set(8, size - 8, true)
    }

    mutating func drawCodewords(_ data: [UInt8]) {
        var index = 0
        var right = size - 1
        while right >= 1 {
            if right == 6 { right = 5 }
            for vertical in 0..<size {
                for j in 0..<2 {
                    let x = right - j
                    let upward = (right + 1) & 2 == 0
                    let y = upward ? size - 1 - vertical : vertical
                    if !isFunction[y][x] && index < data.count * 8 {
                        modules[y][x] = (data[index >> 3] >> UInt8(7 - index & 7)) & 1 == 1
                        index += 1
                    }
                }
            }
            right -= 2
        }
    }

    mutating func applyMask(_ mask: Int) {
        for y in 0..<size {
            for x in 0..<size where !isFunction[y][x] {
                let invert: Bool
                switch mask {
                case 0: invert = (x + y) % 2 == 0
                case 1: invert = y % 2 == 0
                case 2: invert = x % 3 == 0
                case 3: invert = (x + y) % 3 == 0
                case 4: invert = (x / 3 + y / 2) % 2 == 0
                case 5: invert = x * y % 2 + x * y % 3 == 0
                case 6: invert = (x * y % 2 + x * y % 3) % 2 == 0
                default: invert = ((x + y) % 2 + x * y % 3) % 2 == 0
                }
                if invert { modules[y][x].toggle() }
            }
        }
    }

    /// The standard's penalty: runs of five or more, 2×2 blocks, finder-like patterns in rows
    /// and columns, and imbalance of dark and light.
    func penalty() -> Int {
        var result = 0
        func lines(_ transpose: Bool) -> [[Bool]] {
            transpose ? (0..<size).map { x in (0..<size).map { modules[$0][x] } } : modules
        }
        let finder: [Bool] = [true, false, true, true, true, false, true]
        for transpose in [false, true] {
            for line in lines(transpose) {
                var run = 1
                for i in 1..<size {
                    if line[i] == line[i - 1] {
                        run += 1
                        if run == 5 { result += 3 } else if run > 5 { result += 1 }
                    } else {
                        run = 1
                    }
                }
                for i in 0...(size - 7) where Array(line[i..<i + 7]) == finder {
                    let before = i >= 4 && !line[(i - 4)..<i].contains(true)
                    let after = i + 11 <= size && !line[(i + 7)..<(i + 11)].contains(true)
                    if before || after { result += 40 }
                }
            }
        }
        for y in 0..<size - 1 {
            for x in 0..<size - 1 {
                let c = modules[y][x]
                if c == modules[y][x + 1] && c == modules[y + 1][x] && c == modules[y + 1][x + 1] { result += 3 }
            }
        }
        let dark = modules.reduce(0) { $0 + $1.filter { $0 }.count }
        let total = size * size
        let k = (abs(dark * 20 - total * 10) + total - 1) / total - 1
        result += max(0, k) * 10
        return result
    }

    // MARK: The terminal

    /// The code for a terminal, two rows of modules a line (half blocks), with the quiet zone of
    /// four modules the standard asks for. Light modules are drawn (█), dark ones left blank, so
    /// that a terminal's dark background gives the dark modules; `ansi` adds colours that make
    /// it readable on any background.
    public func terminalText(ansi: Bool) -> String {
        let quiet = 4
        func dark(_ x: Int, _ y: Int) -> Bool {
            (0..<size).contains(x) && (0..<size).contains(y) && modules[y][x]
        }
        var lines: [String] = []
        for y in stride(from: -quiet, to: size + quiet, by: 2) {
            var line = ansi ? "\u{1B}[30;47m" : ""
            for x in -quiet..<(size + quiet) {
                let top = !dark(x, y)
                let bottom = y + 1 < size + quiet ? !dark(x, y + 1) : ansi
                if ansi {
                    line += top && bottom ? " " : top ? "▄" : bottom ? "▀" : "█"
                } else {
                    line += top && bottom ? "█" : top ? "▀" : bottom ? "▄" : " "
                }
            }
            lines.append(line + (ansi ? "\u{1B}[0m" : ""))
        }
        return lines.joined(separator: "\n")
    }
}
