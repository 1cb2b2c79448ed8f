-- coplay.lua — a Wireshark/tshark dissector for the coplay wire format, version 1
-- (PROTOCOL.md is its specification, Tests/Vectors/wire-v1.txt its test vectors).
--
--   tshark -X lua_script:Tools/coplay.lua -r session.pcap
--   wireshark -X lua_script:Tools/coplay.lua session.pcap
--
-- Registers on UDP port 47700 (preference "coplay.port") and, for the unicast traffic on
-- ephemeral ports, as a heuristic UDP dissector (datagrams starting with "CPLY"). A datagram
-- that the coplay decoder would reject is shown with a "malformed" expert item.

local coplay = Proto("coplay", "coplay playback sync")

local message_types = {
    [0x01] = "hello", [0x02] = "heartbeat", [0x03] = "leave", [0x04] = "probe", [0x05] = "probe-reply",
    [0x06] = "peer-list", [0x07] = "audience",
    [0x10] = "command", [0x11] = "nack", [0x12] = "ready", [0x13] = "end", [0x14] = "unreliable-message",
    [0x15] = "state-request", [0x16] = "state",
}
local operations = { [1] = "share", [2] = "play", [3] = "seek", [4] = "start", [5] = "play-now", [6] = "pause", [7] = "rate", [8] = "message",
    [9] = "queue-add", [10] = "queue-remove", [11] = "queue-move", [12] = "queue-clear", [13] = "advance", [14] = "queue-entry",
    [15] = "interstitial-at", [16] = "interstitial", [17] = "play-ready" }
local leave_reasons = { [0] = "left", [1] = "shutdown" }

local f = coplay.fields
f.magic = ProtoField.string("coplay.magic", "Magic")
f.version = ProtoField.uint8("coplay.version", "Version")
f.type = ProtoField.uint8("coplay.type", "Type", base.HEX, message_types)
f.flags = ProtoField.uint8("coplay.flags", "Flags", base.HEX)
f.tag_length = ProtoField.uint8("coplay.tag_length", "Authentication tag length")
f.session = ProtoField.uint64("coplay.session", "Session id", base.HEX)
f.sender = ProtoField.uint64("coplay.sender", "Sender id", base.HEX)
f.incarnation = ProtoField.uint32("coplay.incarnation", "Sender incarnation")
f.sequence = ProtoField.uint32("coplay.sequence", "Sequence")
f.payload_length = ProtoField.uint16("coplay.payload_length", "Payload length")
f.tag = ProtoField.bytes("coplay.tag", "Authentication tag")
f.datagram_sent_at = ProtoField.int64("coplay.sent_at", "Send time (Unix ns, the sender's clock)")
f.age = ProtoField.double("coplay.age_ms", "Age on capture (ms, capture clock minus send time)")
f.announce_flags = ProtoField.uint8("coplay.announce.flags", "Announcement flags", base.HEX)
f.reply = ProtoField.bool("coplay.announce.reply", "Reply", 8, nil, 0x01)
f.waiting = ProtoField.bool("coplay.announce.waiting", "Waiting", 8, nil, 0x02)
f.ready_flag = ProtoField.bool("coplay.announce.ready", "Ready", 8, nil, 0x04)
f.waits_out = ProtoField.bool("coplay.announce.waits_out", "Waits out suspensions", 8, nil, 0x08)
f.path_flag = ProtoField.bool("coplay.announce.path", "Path stamp", 8, nil, 0x10)
f.wants_unicast = ProtoField.bool("coplay.announce.wants_unicast", "Wants unicast copies", 8, nil, 0x20)
f.viewer = ProtoField.bool("coplay.announce.viewer", "Viewer (audience)", 8, nil, 0x40)
f.seat = ProtoField.bool("coplay.announce.seat", "Seat on the stage (asked by a viewer, granted in a reply)", 8, nil, 0x80)
f.announce_number = ProtoField.uint32("coplay.announce.number", "Group announcement number")
f.sent_at = ProtoField.int64("coplay.announce.sent_at", "Sent at (ns)")
f.port = ProtoField.uint16("coplay.announce.port", "Unicast port")
f.name = ProtoField.string("coplay.announce.name", "Name")
f.item = ProtoField.string("coplay.item", "Item id")
f.suspensions = ProtoField.uint8("coplay.announce.suspensions", "Suspensions")
f.suspension = ProtoField.string("coplay.announce.suspension", "Suspension reason")
f.vc_entries = ProtoField.uint8("coplay.vc.entries", "Vector clock entries")
f.vc_id = ProtoField.uint64("coplay.vc.id", "Member id", base.HEX)
f.vc_incarnation = ProtoField.uint32("coplay.vc.incarnation", "Member incarnation")
f.vc_count = ProtoField.uint32("coplay.vc.count", "Commands")
f.leave_reason = ProtoField.uint8("coplay.leave.reason", "Leave reason", base.DEC, leave_reasons)
f.token = ProtoField.uint64("coplay.probe.token", "Probe token")
f.t1 = ProtoField.int64("coplay.probe.t1", "T1 (requester transmit, ns)")
f.t2 = ProtoField.int64("coplay.probe.t2", "T2 (responder receive, ns)")
f.t3 = ProtoField.int64("coplay.probe.t3", "T3 (responder transmit, ns)")
f.repair = ProtoField.bool("coplay.command.repair", "Repair", 8, nil, 0x01)
f.dot_id = ProtoField.uint64("coplay.dot.id", "Origin id", base.HEX)
f.dot_incarnation = ProtoField.uint32("coplay.dot.incarnation", "Origin incarnation")
f.dot_counter = ProtoField.uint32("coplay.dot.counter", "Counter")
f.lamport = ProtoField.uint64("coplay.command.lamport", "Lamport timestamp")
f.operation = ProtoField.uint8("coplay.command.operation", "Operation", base.DEC, operations)
f.rate = ProtoField.double("coplay.command.rate", "Rate")
f.resume_rate = ProtoField.double("coplay.command.resume_rate", "Resume rate")
f.position = ProtoField.double("coplay.command.position", "Position (s)")
f.at = ProtoField.int64("coplay.command.at", "At (ns, sender's clock)")
f.url = ProtoField.string("coplay.share.url", "URL")
f.title = ProtoField.string("coplay.share.title", "Title")
f.subtitle = ProtoField.string("coplay.share.subtitle", "Subtitle")
f.item_type = ProtoField.string("coplay.share.type", "Item type")
f.fallback = ProtoField.string("coplay.share.fallback", "Fallback URL")
f.duration = ProtoField.double("coplay.share.duration", "Duration (s, 0 = unknown, -1 = live)")
f.nack_ranges = ProtoField.uint8("coplay.nack.ranges", "Ranges")
f.peer_count = ProtoField.uint8("coplay.peers.count", "Peers")
f.peer_address = ProtoField.ipv4("coplay.peers.address", "Peer address")
f.peer_address6 = ProtoField.ipv6("coplay.peers.address6", "Peer address (IPv6)")
f.peer_port = ProtoField.uint16("coplay.peers.port", "Peer port")
f.audience_viewers = ProtoField.uint32("coplay.audience.viewers", "Viewers of its own")
f.audience_total = ProtoField.uint32("coplay.audience.total", "Audience")
f.nack_from = ProtoField.uint32("coplay.nack.from", "From")
f.nack_to = ProtoField.uint32("coplay.nack.to", "To")
f.end_reason = ProtoField.string("coplay.end.reason", "End reason")
f.message_id = ProtoField.uint32("coplay.message.id", "Message id")
f.message_part = ProtoField.uint16("coplay.message.part", "Part index")
f.message_parts = ProtoField.uint16("coplay.message.parts", "Parts")
f.message_recipients = ProtoField.uint8("coplay.message.recipients", "Recipients")
f.message_bytes = ProtoField.uint16("coplay.message.length", "Part length")
f.message_text = ProtoField.string("coplay.message.text", "Part bytes")
f.snapshot = ProtoField.uint64("coplay.state.snapshot", "Snapshot", base.HEX)
f.wanted = ProtoField.uint32("coplay.state.wanted", "Parts wanted (mask, 0 = all)", base.HEX)
f.wanted_base = ProtoField.uint8("coplay.state.wanted_base", "First part the mask names")
f.queue_entry = ProtoField.string("coplay.queue.entry", "Queue entry")
f.queue_from = ProtoField.string("coplay.queue.from", "Advance from entry")
f.queue_levels = ProtoField.uint8("coplay.queue.levels", "Position levels")
f.queue_digit = ProtoField.uint16("coplay.queue.digit", "Digit")
f.queue_site = ProtoField.uint64("coplay.queue.site", "Site", base.HEX)
f.queue_counter = ProtoField.uint32("coplay.queue.counter", "Counter")
f.interstitial = ProtoField.string("coplay.interstitial.id", "Interstitial")
f.interstitial_duration = ProtoField.double("coplay.interstitial.duration", "Interstitial duration (s)")
f.interstitial_at = ProtoField.double("coplay.interstitial.at", "At main-item position (s)")
f.state_part = ProtoField.uint8("coplay.state.part", "Part index")
f.state_parts = ProtoField.uint8("coplay.state.parts", "Parts")
f.state_lamport = ProtoField.uint64("coplay.state.lamport", "Snapshot Lamport clock")
f.state_commands = ProtoField.uint8("coplay.state.commands", "Commands")

local malformed = ProtoExpert.new("coplay.malformed", "Malformed coplay datagram", expert.group.MALFORMED, expert.severity.ERROR)
coplay.experts = { malformed }

coplay.prefs.port = Pref.uint("UDP port", 47700, "The multicast group's UDP port")

-- A reader over the payload that raises a Lua error (caught below) when it runs short.
local function reader(tvb, offset, limit)
    local r = { offset = offset, limit = limit }
    function r.take(n)
        if n < 0 or r.offset + n > r.limit then error("needs " .. n .. " bytes at offset " .. r.offset) end
        local range = tvb(r.offset, n)
        r.offset = r.offset + n
        return range
    end
    return r
end

-- UTF-8 as the Swift decoder accepts it: no overlong forms, no surrogates, nothing above U+10FFFF.
local function valid_utf8(bytes)
    local i, n = 0, bytes:len()
    while i < n do
        local c = bytes:get_index(i)
        local extra
        if c < 0x80 then extra = 0
        elseif c >= 0xC2 and c <= 0xDF then extra = 1
        elseif c >= 0xE0 and c <= 0xEF then extra = 2
        elseif c >= 0xF0 and c <= 0xF4 then extra = 3
        else return false end
        if i + extra >= n and extra > 0 then return false end
        for k = 1, extra do
            local d = bytes:get_index(i + k)
            if d < 0x80 or d > 0xBF then return false end
        end
        if extra > 0 then
            local second = bytes:get_index(i + 1)
            if (c == 0xE0 and second < 0xA0) or (c == 0xED and second > 0x9F) or (c == 0xF0 and second < 0x90) or (c == 0xF4 and second > 0x8F) then
                return false
            end
        end
        i = i + 1 + extra
    end
    return true
end

local function member(r, tree, id_field, incarnation_field)
    tree:add(id_field, r.take(8))
    tree:add(incarnation_field, r.take(4))
end

local function utf8_string(r, tree, field, length, max)
    if length > max then error("string of " .. length .. " bytes, limit " .. max) end
    if length == 0 then return "" end
    local range = r.take(length)
    if not valid_utf8(range:bytes()) then error("string is not valid UTF-8") end
    tree:add(field, range, range:string(ENC_UTF_8))
    return range:string(ENC_UTF_8)
end

-- A one-byte length then UTF-8 (PROTOCOL.md "short string"); a two-byte length ("long string").
local function short_string(r, tree, field, max) return utf8_string(r, tree, field, r.take(1):uint(), max) end
local function long_string(r, tree, field, max) return utf8_string(r, tree, field, r.take(2):uint(), max) end

local function vector_clock(r, tree, label)
    local count = r.take(1):uint()
    if count > 48 then error(label .. " of " .. count .. " entries") end
    local clock = tree:add(coplay, r.take(0), label .. " (" .. count .. " entries)")
    clock:add(f.vc_entries, count)
    local previous_id, previous_incarnation = nil, nil
    for _ = 1, count do
        local id, incarnation = r.take(8), r.take(4)
        if previous_id ~= nil and (id:uint64() < previous_id or (id:uint64() == previous_id and incarnation:uint() <= previous_incarnation)) then
            error(label .. " entries out of order")
        end
        previous_id, previous_incarnation = id:uint64(), incarnation:uint()
        clock:add(f.vc_id, id)
        clock:add(f.vc_incarnation, incarnation)
        local value = r.take(4)
        if value:uint() == 0 then error(label .. " entry of 0") end
        clock:add(f.vc_count, value)
    end
end

local function dot(r, tree, label)
    local item = tree:add(coplay, r.take(0), label)
    member(r, item, f.dot_id, f.dot_incarnation)
    local counter = r.take(4)
    if counter:uint() == 0 then error("counter 0") end
    item:add(f.dot_counter, counter)
end

-- A wall-clock instant: 0 to 2^62 ns (1970 to about 2116), as the decoder accepts.
local function instant(r, tree, field)
    local range = r.take(8)
    local value = range:int64()
    if value < Int64(0) or value > Int64(0, 0x40000000) then error("instant " .. tostring(value) .. " out of range") end
    tree:add(field, range)
end

local function double(r, tree, field, low, high)
    local range = r.take(8)
    local value = range:float()
    if value ~= value or value < low or value > high then error("number " .. tostring(value) .. " out of range") end
    if value == 0 and 1 / value < 0 then error("negative zero") end
    tree:add(field, range)
    return value
end

-- A rate: 0 (only where playback may stop) or 0.01 to 64.
local function rate(r, tree, field, positive)
    local value = double(r, tree, field, 0, 64)
    if positive and value <= 0 then error("rate 0") end
    if value ~= 0 and value < 0.01 then error("rate below 0.01") end
    return value
end

local function message_part(r, tree)
    tree:add(f.message_id, r.take(4))
    local index = r.take(2)
    local count = r.take(2)
    if count:uint() < 1 or count:uint() > 64 or index:uint() >= count:uint() then error("message part out of range") end
    tree:add(f.message_part, index)
    tree:add(f.message_parts, count)
    local recipients = r.take(1):uint()
    if recipients > 64 or ((index:uint() == 0) ~= (recipients > 0)) then error("bad recipient count") end
    tree:add(f.message_recipients, recipients)
    for _ = 1, recipients do member(r, tree, f.vc_id, f.vc_incarnation) end
    local length = r.take(2):uint()
    tree:add(f.message_bytes, length)
    if length > 0 then tree:add(f.message_text, r.take(length)) end
end

-- A queue entry's item (PROTOCOL.md "The queue"): its id, URL, title and duration.
local function queue_item(r, tree)
    local id = short_string(r, tree, f.queue_entry, 128)
    if id == "" then error("empty queue entry id") end
    if long_string(r, tree, f.url, 512) == "" then error("empty queue url") end
    short_string(r, tree, f.title, 128)
    double(r, tree, f.duration, 0, 4.2e9)
    return id
end

-- An interstitial (PROTOCOL.md "Interstitials"): its id, URL and duration (0 to 3600 s, not 0).
local function interstitial(r, tree)
    if short_string(r, tree, f.interstitial, 128) == "" then error("empty interstitial id") end
    if long_string(r, tree, f.url, 512) == "" then error("empty interstitial url") end
    if double(r, tree, f.interstitial_duration, 0, 3600) == 0 then error("an interstitial of no duration") end
end

-- A queue position: 1 to 8 identifiers (digit, site, counter), the last digit 1 or more.
local function queue_position(r, tree)
    local levels = r.take(1):uint()
    if levels < 1 or levels > 8 then error("queue position of " .. levels .. " levels") end
    local position = tree:add(coplay, r.take(0), "Position (" .. levels .. " levels)")
    position:add(f.queue_levels, levels)
    local digit
    for _ = 1, levels do
        digit = r.take(2)
        position:add(f.queue_digit, digit)
        position:add(f.queue_site, r.take(8))
        position:add(f.queue_counter, r.take(4))
    end
    if digit:uint() < 1 then error("a queue position ending in digit 0") end
end

-- A command (PROTOCOL.md "Commands"), after the command datagram's flags; returns its Lamport
-- timestamp. In a state part (`stripped`) its dependencies must be empty.
local function command(r, tree, stripped)
    dot(r, tree, "Dot")
    local lamport = r.take(8)
    if lamport:uint64() == UInt64(0) or lamport:uint64() > UInt64(0, 0x200000) then error("lamport out of range") end
    tree:add(f.lamport, lamport)
    local dependencies = r.offset
    vector_clock(r, tree, "Dependencies")
    if stripped and r.offset ~= dependencies + 1 then error("a state command with dependencies") end
    local item = short_string(r, tree, f.item, 128)
    if item == "" then error("empty item id") end
    local op = r.take(1)
    tree:add(f.operation, op)
    local code = op:uint()
    if code == 1 then
        long_string(r, tree, f.url, 512)
        short_string(r, tree, f.title, 128)
        short_string(r, tree, f.subtitle, 128)
        short_string(r, tree, f.item_type, 128)
        long_string(r, tree, f.fallback, 512)
        -- -1: a live item, which has no duration (PROTOCOL.md "Live items").
        local duration = double(r, tree, f.duration, -1, 4.2e9)
        if duration < 0 and duration ~= -1 then error("duration " .. tostring(duration)) end
    elseif code == 2 or code == 5 or code == 17 then
        rate(r, tree, f.rate, true)
        double(r, tree, f.position, 0, 4.2e9)
        instant(r, tree, f.at)
    elseif code == 3 then
        double(r, tree, f.position, 0, 4.2e9)
        rate(r, tree, f.resume_rate, false)
        instant(r, tree, f.at)
    elseif code == 4 then
        rate(r, tree, f.rate, true)
        double(r, tree, f.position, 0, 4.2e9)
        instant(r, tree, f.at)
        dot(r, tree, "Trigger")
    elseif code == 6 then
        double(r, tree, f.position, 0, 4.2e9)
        instant(r, tree, f.at)
    elseif code == 7 then
        rate(r, tree, f.rate, false)
        double(r, tree, f.position, 0, 4.2e9)
        instant(r, tree, f.at)
    elseif code == 8 then
        message_part(r, tree)
    elseif code == 9 then
        queue_item(r, tree)
        queue_position(r, tree)
    elseif code == 10 then
        if short_string(r, tree, f.queue_entry, 128) == "" then error("empty queue entry id") end
        dot(r, tree, "Added by")
    elseif code == 11 then
        if short_string(r, tree, f.queue_entry, 128) == "" then error("empty queue entry id") end
        queue_position(r, tree)
    elseif code == 12 then
        vector_clock(r, tree, "Covering")
    elseif code == 13 then
        short_string(r, tree, f.queue_from, 128)
        if queue_item(r, tree) ~= item then error("an advance whose item is not its entry's") end
        rate(r, tree, f.rate, false)
        instant(r, tree, f.at)
    elseif code == 14 then
        queue_item(r, tree)
        queue_position(r, tree)
        dot(r, tree, "Added by")
    elseif code == 15 then
        interstitial(r, tree)
        double(r, tree, f.interstitial_at, 0, 4.2e9)
    elseif code == 16 then
        interstitial(r, tree)
        double(r, tree, f.position, 0, 4.2e9)
        rate(r, tree, f.rate, false)
        instant(r, tree, f.at)
    else
        error("unknown operation " .. code)
    end
    return lamport:uint64()
end

local function payload(kind, r, tree)
    if kind == 0x01 or kind == 0x02 then
        local flags = r.take(1)
        local flags_item = tree:add(f.announce_flags, flags)
        flags_item:add(f.reply, flags)
        flags_item:add(f.waiting, flags)
        flags_item:add(f.ready_flag, flags)
        flags_item:add(f.waits_out, flags)
        flags_item:add(f.path_flag, flags)
        flags_item:add(f.wants_unicast, flags)
        flags_item:add(f.viewer, flags)
        flags_item:add(f.seat, flags)
        local port = r.take(2)
        if port:uint() == 0 then error("unicast port 0") end
        tree:add(f.port, port)
        short_string(r, tree, f.name, 64)
        short_string(r, tree, f.item, 128)
        local count = r.take(1):uint()
        if count > 8 then error(count .. " suspensions") end
        tree:add(f.suspensions, count)
        for _ = 1, count do
            if short_string(r, tree, f.suspension, 64) == "" then error("empty suspension") end
        end
        vector_clock(r, tree, "Digest")
        if bit.band(flags:uint(), 0x10) ~= 0 then
            local number = r.take(4)
            if number:uint() == 0 then error("announcement number 0") end
            tree:add(f.announce_number, number)
            instant(r, tree, f.sent_at)
        end
    elseif kind == 0x03 then
        local reason = r.take(1)
        if reason:uint() > 1 then error("leave reason " .. reason:uint()) end
        tree:add(f.leave_reason, reason)
    elseif kind == 0x04 then
        tree:add(f.token, r.take(8))
        instant(r, tree, f.t1)
    elseif kind == 0x05 then
        tree:add(f.token, r.take(8))
        instant(r, tree, f.t1)
        instant(r, tree, f.t2)
        instant(r, tree, f.t3)
    elseif kind == 0x06 then
        local count = r.take(1):uint()
        if count > 32 then error("peer list of " .. count .. " entries") end
        tree:add(f.peer_count, count)
        for _ = 1, count do
            member(r, tree, f.vc_id, f.vc_incarnation)
            local family = r.take(1):uint()
            if family == 4 then
                local address = r.take(4)
                local a = address:uint()
                if a == 0 or a >= 0xE0000000 and a <= 0xEFFFFFFF or a == 0xFFFFFFFF then
                    error("peer list entry is not a unicast address")
                end
                tree:add(f.peer_address, address)
            elseif family == 6 then
                local address = r.take(16)
                local first, mapped = address(0, 1):uint(), address(0, 10):bytes():tohex() == "00000000000000000000"
                if first == 0xFF or address:bytes():tohex() == string.rep("0", 32)
                    or mapped and address(10, 2):uint() == 0xFFFF then
                    error("peer list entry is not a unicast IPv6 address")
                end
                tree:add(f.peer_address6, address)
            else
                error("address family " .. family .. " in a peer list")
            end
            local port = r.take(2)
            if port:uint() == 0 then error("peer list entry with port 0") end
            tree:add(f.peer_port, port)
        end
    elseif kind == 0x07 then
        local viewers, total = r.take(4), r.take(4)
        if viewers:uint() > total:uint() then error("an audience smaller than the sender's own viewers") end
        tree:add(f.audience_viewers, viewers)
        tree:add(f.audience_total, total)
    elseif kind == 0x10 then
        local flags = r.take(1)
        if bit.band(flags:uint(), 0xFE) ~= 0 then error("reserved command flags") end
        tree:add(f.repair, flags)
        command(r, tree, false)
    elseif kind == 0x11 then
        local count = r.take(1):uint()
        if count < 1 or count > 32 then error("nack of " .. count .. " ranges") end
        tree:add(f.nack_ranges, count)
        for _ = 1, count do
            member(r, tree, f.vc_id, f.vc_incarnation)
            local from, to = r.take(4), r.take(4)
            if from:uint() < 1 or from:uint() > to:uint() then error("bad nack range") end
            tree:add(f.nack_from, from)
            tree:add(f.nack_to, to)
        end
    elseif kind == 0x12 then
        dot(r, tree, "Trigger")
    elseif kind == 0x13 then
        short_string(r, tree, f.end_reason, 128)
    elseif kind == 0x14 then
        message_part(r, tree)
    elseif kind == 0x15 then
        tree:add(f.snapshot, r.take(8))
        tree:add(f.wanted, r.take(4))
        tree:add(f.wanted_base, r.take(1))
    elseif kind == 0x16 then
        tree:add(f.snapshot, r.take(8))
        local index, count = r.take(1), r.take(1)
        if count:uint() < 1 or index:uint() >= count:uint() then error("state part out of range") end
        tree:add(f.state_part, index)
        tree:add(f.state_parts, count)
        local lamport = r.take(8)
        if lamport:uint64() > UInt64(0, 0x200000) then error("state lamport clock out of range") end
        tree:add(f.state_lamport, lamport)
        vector_clock(r, tree, "Frontier")
        local commands = r.take(1):uint()
        tree:add(f.state_commands, commands)
        for i = 1, commands do
            local item = tree:add(coplay, r.take(0), "Command " .. i)
            if command(r, item, true) > lamport:uint64() then error("a state command above the snapshot's clock") end
        end
    end
end

function coplay.dissector(tvb, pinfo, tree)
    local length = tvb:len()
    if length < 4 or tvb(0, 4):string() ~= "CPLY" then return 0 end
    pinfo.cols.protocol = "COPLAY"
    local root = tree:add(coplay, tvb(), "coplay")
    local function bad(text)
        root:add_proto_expert_info(malformed, text)
        pinfo.cols.info = "MALFORMED: " .. text
        return length
    end
    if length < 34 then return bad(length .. " bytes, header is 34") end
    if length > 1200 then return bad(length .. " bytes, limit 1200") end
    root:add(f.magic, tvb(0, 4))
    root:add(f.version, tvb(4, 1))
    if tvb(4, 1):uint() ~= 1 then return bad("version " .. tvb(4, 1):uint()) end
    local kind = tvb(5, 1):uint()
    root:add(f.type, tvb(5, 1))
    if message_types[kind] == nil then return bad(string.format("unknown type 0x%x", kind)) end
    local flags, tag_length = tvb(6, 1):uint(), tvb(7, 1):uint()
    root:add(f.flags, tvb(6, 1))
    root:add(f.tag_length, tvb(7, 1))
    if bit.band(flags, 0xFC) ~= 0 then return bad("reserved flags") end
    local tagged, timed = bit.band(flags, 1) ~= 0, bit.band(flags, 2) ~= 0
    if (tagged and (tag_length < 1 or tag_length > 32)) or (not tagged and tag_length ~= 0) then return bad("tag length") end
    local time_length = timed and 8 or 0
    root:add(f.session, tvb(8, 8))
    root:add(f.sender, tvb(16, 8))
    root:add(f.incarnation, tvb(24, 4))
    root:add(f.sequence, tvb(28, 4))
    local payload_length = tvb(32, 2):uint()
    root:add(f.payload_length, tvb(32, 2))
    if 34 + payload_length + time_length + tag_length ~= length then return bad("lengths do not add up") end
    local name = message_types[kind]
    root:append_text(", " .. name)
    pinfo.cols.info = string.format("%s from %s/%d seq %d", name, tvb(16, 8):uint64():tohex(), tvb(24, 4):uint(), tvb(28, 4):uint())
    local body = root:add(coplay, tvb(34, payload_length), "Payload: " .. name)
    local r = reader(tvb, 34, 34 + payload_length)
    local ok, problem = pcall(payload, kind, r, body)
    if not ok then return bad(tostring(problem)) end
    if r.offset ~= 34 + payload_length then return bad((34 + payload_length - r.offset) .. " trailing bytes") end
    if timed then
        local sent = tvb(34 + payload_length, 8)
        root:add(f.datagram_sent_at, sent)
        -- The send time as an age on capture (a replayed recording shows how old it is).
        local captured = pinfo.abs_ts
        local age = (captured - sent:int64():tonumber() / 1e9) * 1000
        root:add(f.age, sent, age):set_generated()
    end
    if tag_length > 0 then root:add(f.tag, tvb(34 + payload_length + time_length, tag_length)) end
    return length
end

local current_port = coplay.prefs.port
DissectorTable.get("udp.port"):add(current_port, coplay)

function coplay.prefs_changed()
    if current_port ~= coplay.prefs.port then
        DissectorTable.get("udp.port"):remove(current_port, coplay)
        current_port = coplay.prefs.port
        DissectorTable.get("udp.port"):add(current_port, coplay)
    end
end

local function heuristic(tvb, pinfo, tree)
    if tvb:len() < 34 or tvb(0, 4):string() ~= "CPLY" then return false end
    coplay.dissector(tvb, pinfo, tree)
    return true
end
coplay:register_heuristic("udp", heuristic)
