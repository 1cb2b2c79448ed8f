import CoplayCore
import Testing

@Suite struct JSONParserTests {
    @Test func parsesWhatMpvWrites() throws {
        let event = try JSONParser.parse(#"{"event":"property-change","id":1,"name":"speed","data":1.005000}"#)
        #expect(event["event"]?.string == "property-change")
        #expect(event["id"]?.integer == 1)
        #expect(event["data"]?.number == 1.005)
        let reply = try JSONParser.parse(#" {"data":null,"request_id":7,"error":"success"} "#)
        #expect(reply["data"] == .null)
        #expect(reply["request_id"]?.integer == 7)
        let nested = try JSONParser.parse(#"[true,false,-1.5e3,"a\"b\\c\u00e9\ud83d\ude00",{},[]]"#)
        #expect(
            nested
                == .array([.bool(true), .bool(false), .double(-1500), .string("a\"b\\cé😀"), .object([]), .array([])]))
    }

    @Test func rejectsMalformedInputWithoutTrapping() {
        let bad = [
            "", "{", "[1,", #"{"a"}"#, #"{"a":1,}"#, "tru", "1e999", "-", #""\x""#, #""\u12""#, "[1] 2",
            "\"a\u{01}\"", #""\ud800\u0041""#, String(repeating: "[", count: 40) + String(repeating: "]", count: 40),
        ]
        for text in bad {
            #expect(throws: JSONParser.Error.self, "\(text.prefix(20))") { try JSONParser.parse(text) }
        }
        // Random bytes: an error or a value, never a trap.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let bytes = (0..<Int.random(in: 0..<40, using: &generator)).map { _ in
                Array(#"{}[]",:0123456789.eE+-tfnrulsa\"#.utf8).randomElement(using: &generator)!
            }
            _ = try? JSONParser.parse(bytes)
        }
    }
}
