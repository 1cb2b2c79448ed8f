import CoplaySimulation
import Foundation
import Testing

/// The player follower's cases, from `Tests/Vectors/follower-cases.json`: the same file runs
/// inside the `.wasm` (`Tools/web/follower-cases.mjs`, in the wasm-core tier).
@Suite struct FollowerTests {
    static let cases = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../Vectors/follower-cases.json").standardized

    @Test func theFollowersCases_allHold() throws {
        let result = FollowerScript.run(Array(try Data(contentsOf: Self.cases)))
        #expect(result.cases >= 12)
        #expect(result.steps >= 100)
        #expect(result.failures == [])
    }

    @Test func aCaseThatExpectsOtherwise_fails() {
        // The runner itself: a wrong expectation is a failure, so the suite cannot pass by
        // checking nothing.
        let json =
            #"{"cases":[{"name":"wrong","player":"mpv","steps":[{"at":0,"command":"load /a 0","expect":["play"]}]}]}"#
        let result = FollowerScript.run(Array(json.utf8))
        #expect(result.failures.count == 1)
        #expect(FollowerScript.run(Array("[]".utf8)).failures.count == 1)
    }
}
