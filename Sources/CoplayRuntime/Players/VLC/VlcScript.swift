/// The interface script coplay runs inside VLC 3 (`--lua-intf coplay`): the agent writes it
/// where the VLC it starts looks for interface scripts. One copy, here; its protocol is
/// `VlcPlayer`'s other half.
enum VlcScript {
    static let source = #"""
        --[[ coplay.lua: VLC 3's side of coplay's VLC adapter, an interface script (--lua-intf coplay).
         Apache-2.0. Written by the coplay agent that starts VLC; the agent's side is VlcPlayer.

         It speaks lines of text with the agent on its standard input and output (a socket pair the agent
         made). Numbers are integers (microseconds, millionths of a rate), so that no locale's decimal comma
         matters. It watches VLC every 2 ms and says what changed as soon as it changes; it decides nothing
         about time itself.

         To VLC:   load ID URI | seek ID US | pause ID | play ID | rate ID PPM | time ID | stop ID
                   osd TEXT | quit
         From VLC: hello coplay-vlc 1 VERSION | done ID | nosuch ID | time ID US|- | loaded ID
                   length US | path URI | paused 0|1 | rate PPM | restarted | jump US | ended | failed
         An empty line once a second: VLC's write fails, or SIGPIPE ends it, once the agent is gone.
        ]]

        local stepMicros = 2000
        local pendingMax = 65536

        local function say(line) return vlc.net.write(1, line .. "\n") end

        -- VLC 3's clock for an input is its "time" variable, which it sets from the demuxer every 250 ms.
        -- Between those steps it is carried forward from the instant the step was seen, at the rate, while
        -- playing: `step` is that anchor.
        local step = nil
        local lastURI, lastState, lastRate, lastLength = nil, nil, nil, nil
        local loadID, loadedSaid, endedSaid = nil, false, false
        local seekTarget = nil
        local observer = nil

        local function carried(now)
          if step == nil then return nil end
          if not step.playing then return step.value end
          return step.value + math.floor((now - step.at) * step.rate)
        end

        local function reanchor(now, playing, rate)
          local value = carried(now)
          if value ~= nil then step = { value = value, raw = step.raw, at = now, playing = playing, rate = rate } end
        end

        local function command(line, now)
          local verb, rest = line:match("^(%S+)%s?(.*)$")
          if verb == nil then return end
          local input = vlc.object.input()
          if verb == "load" then
            local id, uri = rest:match("^(%d+) (%S+)$")
            if id == nil then return end
            vlc.playlist.clear()
            step, seekTarget, loadID, loadedSaid, endedSaid, lastLength = nil, nil, id, false, false, nil
            vlc.playlist.add({ { path = uri, options = { "start-paused", "no-input-fast-seek" } } })
            return
          elseif verb == "osd" then
            pcall(vlc.osd.message, rest, nil, "top-left", 3000000)
            return
          elseif verb == "quit" then
            vlc.misc.quit()
            return
          end
          local id, argument = rest:match("^(%d+)%s?(%d*)$")
          if id == nil then return end
          if verb == "time" then
            local value = input and carried(now)
            say("time " .. id .. " " .. (value and string.format("%d", value) or "-"))
          elseif verb == "stop" then
            vlc.playlist.stop()
            vlc.playlist.clear()
            step, seekTarget, loadID = nil, nil, nil
            say("done " .. id)
          elseif input == nil then
            say("nosuch " .. id)
          elseif verb == "seek" and argument ~= "" then
            -- Said restarted once the clock shows the target (VLC sets it as it takes the seek).
            seekTarget, step, endedSaid = tonumber(argument), nil, false
            vlc.var.set(input, "time", seekTarget)
            say("done " .. id)
          elseif verb == "pause" or verb == "play" then
            vlc.var.set(input, "state", verb == "pause" and 3 or 2)
            say("done " .. id)
          elseif verb == "rate" and argument ~= "" then
            vlc.var.set(input, "rate", tonumber(argument) / 1000000)
            say("done " .. id)
          end
        end

        local function watch(now)
          local input = vlc.object.input()
          if input == nil then
            if lastState == 2 and loadedSaid and not endedSaid then
              endedSaid = true
              say("ended")
            end
            lastURI, step, lastState = nil, nil, nil
            return
          end
          local item = vlc.input.item()
          local uri = item and item:uri()
          if uri ~= lastURI then lastURI, step, lastState, lastRate = uri, nil, nil, nil end
          local state = vlc.var.get(input, "state")
          if state == 5 then
            if lastState ~= 5 then say("failed") end
            lastState = state
            return
          end
          local rate = vlc.var.get(input, "rate") or 1
          if (state == 2 or state == 3) and loadID ~= nil and not loadedSaid then
            loadedSaid = true
            if uri then say("path " .. uri) end
            say("loaded " .. loadID)
          end
          if (state == 2 or state == 3) and state ~= lastState then
            reanchor(now, state == 2, rate)
            say("paused " .. (state == 3 and "1" or "0"))
            if observer then vlc.net.write(observer, "paused " .. (state == 3 and "1" or "0") .. "\n") end
          end
          if state == 4 and not endedSaid then
            endedSaid = true
            say("ended")
          end
          lastState = state
          if rate ~= lastRate then
            lastRate = rate
            reanchor(now, state == 2, rate)
            say(string.format("rate %d", math.floor(rate * 1000000 + 0.5)))
          end
          local length = vlc.var.get(input, "length")
          if length and length > 0 and length ~= lastLength then
            lastLength = length
            say(string.format("length %d", length))
          end
          local value = vlc.var.get(input, "time")
          if value == nil or (step ~= nil and value == step.raw) then return end
          local expected, before = carried(now), step and step.raw
          step = { value = value, raw = value, at = now, playing = state == 2, rate = rate }
          if observer then vlc.net.write(observer, string.format("step %d\n", value)) end
          if seekTarget ~= nil then
            if math.abs(value - seekTarget) < 1000000 then
              seekTarget = nil
              say("restarted")
            end
          elseif expected ~= nil and (value > expected + 1000000 or value < before - 500000) then
            -- Ahead of where it could have played to, or back from where it was: the person seeked. A
            -- clock that fell behind (VLC starved, or stopped whole: SIGSTOP, a laptop's lid) is no seek.
            say(string.format("jump %d", value))
          end
        end

        -- A benchmark's own reading of VLC's clock (COPLAY_VLC_OBSERVE=PORT, on loopback): each step of
        -- the clock, written the moment it is seen.
        local observePort = tonumber(os.getenv("COPLAY_VLC_OBSERVE") or "")
        if observePort then observer = vlc.net.connect_tcp("127.0.0.1", observePort) end

        say("hello coplay-vlc 1 " .. vlc.misc.version())
        -- This end of the socket never blocks: the clock is watched every 2 ms whether or not the agent
        -- speaks. A read cannot tell "nothing yet" from "the agent is gone"; a write can.
        local pending = ""
        local heartbeatAt = 0
        while true do
          local now = vlc.misc.mdate()
          while true do
            local data = vlc.net.read(0, 4096)
            if data == nil then break end
            pending = pending .. data
            while true do
              local line, rest = pending:match("^([^\n]*)\n(.*)$")
              if line == nil then break end
              pending = rest
              command(line, now)
            end
            if #pending > pendingMax then pending = "" end
          end
          watch(now)
          if now >= heartbeatAt then
            heartbeatAt = now + 1000000
            local written = vlc.net.write(1, "\n")
            if written == nil or written < 1 then
              vlc.misc.quit()
              break
            end
          end
          vlc.misc.mwait(now + stepMicros)
        end
        """#
}
