-- The decoder of kwire.lua: kwire's second implementation, for Wireshark
-- builds that cannot load the C plugin (kwire.so). It walks the generated
-- tables above (D: field descriptors, S: structs, M: messages, NESTED and
-- DATA: the payloads inside bytes fields; the compiled programs of kwire)
-- and builds the same tree as the C plugin: the same protocol and field
-- names, arrays as "Name (count)" subtrees, kwire.null under null fields,
-- kwire.error_code for error codes, consumer protocol metadata and
-- assignments and Envelope messages decoded below their bytes fields. The
-- tests compare its tshark output field by field with the C plugin's.
--
-- Not here, unlike the C plugin: snappy, lz4 and zstd record batches (gzip is
-- decompressed with Wireshark's own zlib), records inside compressed legacy
-- message sets, and spec overlays.
--
-- Its statistics are the C plugin's, counted alike: tshark -z kwire,srt and
-- -z kwire,tree print the same text. Lua cannot register into Wireshark's
-- service response time and stats_tree frameworks, so in Wireshark they are
-- text windows under Statistics > Kafka (kwire.lua), not the usual dialogs.

-- Installed (make install, the .deb), this file sits in Wireshark's global
-- Lua folder beside kwire.so and steps aside when the C plugin is loaded:
-- Wireshark registers the binary plugins' protocols (proto_init) before it
-- runs any Lua script (wslua_init), so the plugin's "kwire" dissector exists
-- by now, and a second Proto("kwire") would fail with "there cannot be two
-- protocols with the same description" at every start. Where no kwire.so fits
-- (another Wireshark version, macOS, Windows) there is none, and this file
-- is the dissector. Silently: tshark -G plugins shows which one is loaded.
-- Dissector.get returns nil for an unknown name (Wireshark 4.0 on); older
-- releases raised an error instead: pcall covers both.
do
  local found, plugin = pcall(Dissector.get, "kwire")
  if found and plugin then return end
end

local kwire = Proto("kwire", "Apache Kafka (kwire)")

-- WireType and FieldFlag values of dissector/protocol/program.hpp.
local INT8, INT16, INT32, INT64, UINT16, UINT32, FLOAT64, BOOL, UUID, STRING, BYTES, RECORDS, STRUCT, ARRAY =
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13
local NULLABLE, COMPACT, SENSITIVE, ERROR_CODE = 1, 2, 16, 64
local MAX_MESSAGE = 256 * 1024 * 1024

local function has(flags, bit) return math.floor(flags / bit) % 2 == 1 end

-- ---- Fields ----------------------------------------------------------------

local FIELDS = {}     -- abbrev -> {pf, type, error_code, name}
local pfs = {}

local function ftype_of(t)
  if t == "UINT32HEX" then return ftypes.UINT32, base.HEX end
  if t == "NONE" or t == "STRING" or t == "BYTES" or t == "BOOLEAN" or t == "DOUBLE" then return ftypes[t], base.NONE end
  return ftypes[t], base.DEC
end

for _, g in ipairs(GEN) do
  -- kwire.unknown_tagged_field is registered below with the generic fields.
  if g[1] == "kwire.unknown_tagged_field" then goto continue end
  local ft, b = ftype_of(g[4])
  local vals = nil
  if g[5] then vals = ERROR_NAMES elseif g[6] then vals = VALS[g[6]] end
  local pf
  if ft == ftypes.BOOLEAN then
    pf = ProtoField.bool(g[1], g[2], base.NONE, nil, nil, g[3])
  else
    pf = ProtoField.new(g[2], g[1], ft, vals, b, nil, g[3])
  end
  FIELDS[g[1]] = {pf = pf, type = g[4], error_code = g[5], name = g[2]}
  pfs[#pfs + 1] = pf
  ::continue::
end

local function generic(abbrev, name, ft, vals, b, blurb)
  local pf = ProtoField.new(name, abbrev, ft, vals, b, nil, blurb)
  pfs[#pfs + 1] = pf
  return pf
end

local f_length = generic("kwire.length", "Length", ftypes.INT32, nil, base.DEC, "Size prefix: bytes after it")
local f_api_key = generic("kwire.api_key", "Api key", ftypes.INT16, API_NAMES, base.DEC)
local f_api_version = generic("kwire.api_version", "Api version", ftypes.INT16, nil, base.DEC)
local f_correlation_id = generic("kwire.correlation_id", "Correlation id", ftypes.INT32, nil, base.DEC)
local f_direction = generic("kwire.direction", "Direction", ftypes.UINT8, {[0] = "Request", [1] = "Response"}, base.DEC)
local f_api_name = generic("kwire.api_name", "Api name", ftypes.STRING, nil, base.NONE)
local f_error_code = generic("kwire.error_code", "Error code", ftypes.INT16, ERROR_NAMES, base.DEC,
  "Every non-zero error code anywhere in the message, or 0 when there is none")
local f_request_in = ProtoField.framenum("kwire.request_in", "Request in frame", base.NONE, frametype.REQUEST)
local f_response_in = ProtoField.framenum("kwire.response_in", "Response in frame", base.NONE, frametype.RESPONSE)
local f_time = ProtoField.relative_time("kwire.time", "Time since request")
pfs[#pfs + 1] = f_request_in
pfs[#pfs + 1] = f_response_in
pfs[#pfs + 1] = f_time
local f_null = generic("kwire.null", "Null", ftypes.NONE, nil, base.NONE, "The field is null on the wire")
local f_redacted = generic("kwire.redacted", "Redacted", ftypes.NONE, nil, base.NONE,
  "A secret (SASL token, password, HMAC): never shown")
local f_unknown_tag = generic("kwire.unknown_tagged_field", "UnknownTaggedField", ftypes.BYTES, nil, base.NONE,
  "A tagged field this version's spec does not define")
local f_unknown_tag_number = generic("kwire.unknown_tagged_field.tag", "Tag", ftypes.UINT32, nil, base.DEC)
local f_overlay = generic("kwire.overlay", "Spec overlay", ftypes.STRING, nil, base.NONE)
local f_overlay_field = generic("kwire.overlay_field", "Overlay field", ftypes.STRING, nil, base.NONE,
  "A field of a spec overlay loaded at run time")
local f_not_kafka = generic("kwire.not_kafka", "Not Kafka", ftypes.STRING, nil, base.NONE)
kwire.fields = pfs

local ei_malformed = ProtoExpert.new("kwire.malformed", "Malformed Kafka message", expert.group.MALFORMED, expert.severity.ERROR)
local ei_error = ProtoExpert.new("kwire.error", "Kafka error code", expert.group.RESPONSE_CODE, expert.severity.NOTE)
local ei_unmatched = ProtoExpert.new("kwire.unmatched", "Response whose request is not in the capture: not decoded",
  expert.group.SEQUENCE, expert.severity.WARN)
local ei_not_kafka = ProtoExpert.new("kwire.not_kafka.expert", "Not Kafka", expert.group.UNDECODED, expert.severity.WARN)
local ei_overlay = ProtoExpert.new("kwire.overlay.expert", "Decoded through a spec overlay", expert.group.PROTOCOL,
  expert.severity.NOTE)
kwire.experts = {ei_malformed, ei_error, ei_unmatched, ei_not_kafka, ei_overlay}

kwire.prefs.heuristic = Pref.bool("Find Kafka on any port", true,
  "Recognise a connection as Kafka from its first request, on any port, as kwire decode does")

-- ---- Reading -----------------------------------------------------------------

-- One decode run over a PDU, or over a payload inside one of its bytes
-- fields: position, end (narrowed inside tagged fields), whether the run
-- failed, and what the summary line needs. A run records its first error
-- only, after those of the runs before it (R.errs: the PDU's errors, in
-- order; R.prefix names the payload a nested run reads).
local function fail(R, at, reason)
  if not R.failed then
    R.failed = true
    R.errs[#R.errs + 1] = {offset = at, reason = R.prefix .. reason}
  end
  return false
end

local function need(R, n, name)
  local left = R.stop - R.pos
  if left >= n then return true end
  return fail(R, R.pos, name .. ": needs " .. n .. " bytes, " .. left .. " left")
end

-- Unsigned varint of at most 5 bytes (lengths, counts, tags).
local function uvarint(R)
  local v, mul = 0, 1
  for i = 0, 4 do
    if R.pos + i >= R.stop then return nil, "truncated" end
    local b = R.tvb(R.pos + i, 1):uint()
    -- Strict, as Kafka reads them: the fifth byte holds the top 4 bits only.
    if i == 4 and b >= 16 then return nil, "overlong" end
    v = v + (b % 128) * mul
    if b < 128 then
      R.pos = R.pos + i + 1
      return v
    end
    mul = mul * 128
  end
  return nil, "overlong"
end

-- Zig-zag varints of records: 5 bytes for a varint, 10 for a varlong.
local function zigzag_varint(tvb, pos, stop)
  local v, mul = 0, 1
  for i = 0, 4 do
    if pos + i >= stop then return nil end
    local b = tvb(pos + i, 1):uint()
    v = v + (b % 128) * mul
    if b < 128 then
      v = v % 4294967296   -- bits past 32 are dropped, as Kafka's ByteUtils does
      if v % 2 == 1 then return -(v + 1) / 2, pos + i + 1 end
      return v / 2, pos + i + 1
    end
    mul = mul * 128
  end
  return nil
end

local function zigzag_varlong(tvb, pos, stop)
  local v = UInt64(0)
  for i = 0, 9 do
    if pos + i >= stop then return nil end
    local b = tvb(pos + i, 1):uint()
    v = v:bor(UInt64(b % 128):lshift(7 * i))
    if b < 128 then
      local half = v:rshift(1)
      local r = Int64.new(half:lower(), half:higher())
      if v:band(1) == UInt64(1) then r = -r - 1 end
      return r, pos + i + 1
    end
  end
  return nil
end

-- Invalid UTF-8 becomes U+FFFD byte by byte (overlong forms, surrogates and
-- code points past U+10FFFF included) and NUL becomes U+2400, as in kwire.so.
local function utf8_clean(raw)
  if not raw:find("[%z\128-\255]") then return raw end
  local out = {}
  local i, n = 1, #raw
  while i <= n do
    local c = raw:byte(i)
    if c == 0 then
      out[#out + 1] = "\226\144\128"
      i = i + 1
    elseif c < 128 then
      out[#out + 1] = string.char(c)
      i = i + 1
    else
      local len = (c >= 0xc2 and c <= 0xdf) and 2 or (c >= 0xe0 and c <= 0xef) and 3 or (c >= 0xf0 and c <= 0xf4) and 4 or 0
      local ok = len > 0 and i + len - 1 <= n
      for k = 1, len - 1 do
        if ok then
          local b = raw:byte(i + k)
          ok = b >= 0x80 and b <= 0xbf
        end
      end
      if ok then
        local b1 = raw:byte(i + 1)
        if c == 0xe0 then ok = b1 >= 0xa0
        elseif c == 0xed then ok = b1 <= 0x9f
        elseif c == 0xf0 then ok = b1 >= 0x90
        elseif c == 0xf4 then ok = b1 <= 0x8f end
      end
      if ok then
        out[#out + 1] = raw:sub(i, i + len - 1)
        i = i + len
      else
        out[#out + 1] = "\239\191\189"
        i = i + 1
      end
    end
  end
  return table.concat(out)
end

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
-- Kafka's rendering of a uuid: URL-safe base64 without padding.
local function uuid_text(range)
  local bytes = range:bytes()
  local out = {}
  local n = bytes:len()
  local i = 0
  while i < n do
    local a = bytes:get_index(i)
    local b = i + 1 < n and bytes:get_index(i + 1) or 0
    local c = i + 2 < n and bytes:get_index(i + 2) or 0
    local x = a * 65536 + b * 256 + c
    local chars = math.min(4, n - i + 1)
    for k = 1, chars do
      local idx = math.floor(x / 2 ^ (6 * (4 - k))) % 64
      out[#out + 1] = B64:sub(idx + 1, idx + 1)
    end
    i = i + 3
  end
  return table.concat(out)
end

-- ---- Building the tree -------------------------------------------------------

local decode_field, nested_payload

local function null_child(R, item)
  item:add(f_null, R.tvb(0, 0)):set_generated()
end

local function note_error_code(R, tree, item, range, F, v)
  R.error_fields = R.error_fields + 1
  if v ~= 0 then
    R.errors = R.errors + 1
    local e = tree:add(f_error_code, range, v)
    e:set_generated()
    e:set_hidden()
    local name = ERROR_NAMES[v] or "unknown error"
    item:add_proto_expert_info(ei_error, string.format("%s: %s (%d)", F.name, name, v))
  end
end

-- The summary line's material: top-level fields and the first nested error.
-- A payload inside a bytes field is another message: none of its fields.
local function note_summary(R, depth, d, value, path, element)
  if R.inner > 0 then return end
  if depth == 1 and not element then R.top[d[1]] = value end
  if R.in_records then return end
  if depth > 1 and not element and has(d[5], ERROR_CODE) and value ~= 0 and not R.nested_error then
    R.nested_error = {path = path, value = value}
  end
  if d[8] and type(value) == "string" then
    R.groups[#R.groups + 1] = value
  end
end

local function records(R, tree, pos, stop)
  local tvb = R.tvb
  R.in_records = true
  local function batch(bpos, size)
    local total = 12 + size
    local item = tree:add(FIELDS["kwire.record_batch"].pf, tvb(bpos, total))
    local function leaf(name, off, len, value)
      return item:add(FIELDS["kwire.record_batch." .. name].pf, tvb(bpos + off, len), value)
    end
    leaf("base_offset", 0, 8, tvb(bpos, 8):int64())
    leaf("batch_length", 8, 4, tvb(bpos + 8, 4):int())
    leaf("partition_leader_epoch", 12, 4, tvb(bpos + 12, 4):int())
    leaf("magic", 16, 1, tvb(bpos + 16, 1):int())
    leaf("crc", 17, 4, tvb(bpos + 17, 4):uint())
    local attributes = tvb(bpos + 21, 2):int()
    leaf("attributes", 21, 2, attributes)
    leaf("last_offset_delta", 23, 4, tvb(bpos + 23, 4):int())
    leaf("base_timestamp", 27, 8, tvb(bpos + 27, 8):int64())
    leaf("max_timestamp", 35, 8, tvb(bpos + 35, 8):int64())
    leaf("producer_id", 43, 8, tvb(bpos + 43, 8):int64())
    leaf("producer_epoch", 51, 2, tvb(bpos + 51, 2):int())
    leaf("base_sequence", 53, 4, tvb(bpos + 53, 4):int())
    local count = tvb(bpos + 57, 4):int()
    leaf("record_count", 57, 4, count)
    local codec = attributes % 8
    local rtvb, rpos, rstop = tvb, bpos + 61, bpos + total
    if codec == 1 and total > 61 then
      local plain = tvb(bpos + 61, total - 61):uncompress("Decompressed records")
      if not plain then return fail(R, bpos, "record batch: gzip data does not decompress") end
      rtvb, rpos, rstop = plain, 0, plain:len()
    elseif codec ~= 0 then
      item:add(tvb(bpos + 61, total - 61), string.format("Records (%d): compressed with codec %d, not decoded by kwire.lua", count, codec))
      return true
    end
    if count < 0 then return fail(R, bpos + 57, "record batch: negative record count " .. count) end
    local list = item:add(rtvb(rpos, rstop - rpos), string.format("Records (%d)", count))
    local p = rpos
    for i = 0, count - 1 do
      local start = p
      local len, q = zigzag_varint(rtvb, p, rstop)
      if not len or len < 0 or q + len > rstop then return fail(R, bpos, "record batch: record " .. i .. " does not fit") end
      local rec = list:add(FIELDS["kwire.record"].pf, rtvb(start, q + len - start))
      rec:set_text(string.format("[%d]", i))
      rec:add(FIELDS["kwire.record.length"].pf, rtvb(p, q - p), len)
      local rend = q + len
      p = q
      rec:add(FIELDS["kwire.record.attributes"].pf, rtvb(p, 1), rtvb(p, 1):int())
      p = p + 1
      local ts, q2 = zigzag_varlong(rtvb, p, rend)
      if not ts then return fail(R, bpos, "record batch: bad timestamp delta") end
      rec:add(FIELDS["kwire.record.timestamp_delta"].pf, rtvb(p, q2 - p), ts)
      p = q2
      local od, q3 = zigzag_varint(rtvb, p, rend)
      if not od then return fail(R, bpos, "record batch: bad offset delta") end
      rec:add(FIELDS["kwire.record.offset_delta"].pf, rtvb(p, q3 - p), od)
      p = q3
      for _, what in ipairs({"key", "value"}) do
        local n, q4 = zigzag_varint(rtvb, p, rend)
        if not n or n < -1 or q4 + math.max(n, 0) > rend then return fail(R, bpos, "record batch: bad " .. what .. " length") end
        local pf = FIELDS["kwire.record." .. what].pf
        if n < 0 then
          local it = rec:add(pf, rtvb(q4, 0))
          it:set_text(what == "key" and "Key: null" or "Value: null")
          null_child(R, it)
          p = q4
        else
          rec:add(pf, rtvb(q4, n))
          p = q4 + n
        end
      end
      local hc, q5 = zigzag_varint(rtvb, p, rend)
      if not hc or hc < 0 then return fail(R, bpos, "record batch: bad header count") end
      local headers = rec:add(rtvb(p, rend - p), string.format("Headers (%d)", hc))
      p = q5
      for h = 0, hc - 1 do
        local hstart = p
        local hdr = headers:add(FIELDS["kwire.record_header"].pf, rtvb(hstart, 0))
        hdr:set_text(string.format("[%d]", h))
        local kn, q6 = zigzag_varint(rtvb, p, rend)
        if not kn or kn < 0 or q6 + kn > rend then return fail(R, bpos, "record batch: bad header key length") end
        hdr:add(FIELDS["kwire.record_header.key"].pf, rtvb(p, q6 + kn - p), kn > 0 and utf8_clean(rtvb(q6, kn):raw()) or "")
        p = q6 + kn
        local vn, q7 = zigzag_varint(rtvb, p, rend)
        if not vn or vn < -1 or q7 + math.max(vn, 0) > rend then return fail(R, bpos, "record batch: bad header value length") end
        if vn < 0 then
          local it = hdr:add(FIELDS["kwire.record_header.value"].pf, rtvb(q7, 0))
          it:set_text("Value: null")
          null_child(R, it)
          p = q7
        else
          hdr:add(FIELDS["kwire.record_header.value"].pf, rtvb(q7, vn))
          p = q7 + vn
        end
        hdr:set_len(p - hstart)
      end
      if p ~= rend then return fail(R, bpos, "record batch: record " .. i .. " has bytes after its fields") end
    end
    return true
  end

  local function legacy(mpos, size)
    local magic = tvb(mpos + 16, 1):int()
    local item = tree:add(FIELDS["kwire.legacy_message"].pf, tvb(mpos, 12 + size))
    local function leaf(name, off, len, value)
      return item:add(FIELDS["kwire.legacy_message." .. name].pf, tvb(mpos + off, len), value)
    end
    leaf("offset", 0, 8, tvb(mpos, 8):int64())
    leaf("message_size", 8, 4, size)
    leaf("crc", 12, 4, tvb(mpos + 12, 4):uint())
    leaf("magic", 16, 1, magic)
    local attributes = tvb(mpos + 17, 1):int()
    leaf("attributes", 17, 1, attributes)
    local q = mpos + 18
    if magic == 1 then
      leaf("timestamp", 18, 8, tvb(mpos + 18, 8):int64())
      q = q + 8
    end
    for _, what in ipairs({"key", "value"}) do
      local n = tvb(q, 4):int()
      local pf = FIELDS["kwire.legacy_message." .. what].pf
      if n < 0 then
        local it = item:add(pf, tvb(q, 4))
        it:set_text(what == "key" and "Key: null" or "Value: null")
        null_child(R, it)
        q = q + 4
      else
        item:add(pf, tvb(q + 4, n))
        q = q + 4 + n
      end
    end
    if attributes % 8 ~= 0 then
      item:add(tvb(mpos, 12 + size), "InnerMessages: compressed, not decoded by kwire.lua")
    end
    return true
  end

  local min_size = {[0] = 14, [1] = 22, [2] = 49}
  local p = pos
  while p < stop do
    local left = stop - p
    local size = left >= 12 and tvb(p + 8, 4):int() or 0
    local magic = left > 16 and tvb(p + 16, 1):int() or -1
    if left >= 12 then
      if magic > 2 then return fail(R, p, "record batch: bad magic " .. magic) end
      if size < min_size[magic < 0 and 0 or magic] then return fail(R, p, "record batch: size " .. size .. " is below the minimum") end
    end
    if left < 12 or size > left - 12 then
      -- A fetch response cut this batch at its byte limit: normal.
      tree:add(FIELDS["kwire.partial_batch"].pf, tvb(p, left))
      break
    end
    local ok
    if magic == 2 then ok = batch(p, size) else ok = legacy(p, size) end
    if not ok then return false end
    p = p + 12 + size
  end
  R.in_records = false
  return true
end

-- A length: compact (unsigned varint of length + 1) or classic int16/int32.
local function read_length(R, d, compact, wide)
  if compact then
    local at = R.pos
    local u, err = uvarint(R)
    if not u then
      if err == "truncated" then return fail(R, at, d[1] .. ": length varint runs past the end") end
      return fail(R, at, d[1] .. ": overlong length varint")
    end
    return true, u - 1
  end
  if wide then
    if not need(R, 4, d[1]) then return false end
    local v = R.tvb(R.pos, 4):int()
    R.pos = R.pos + 4
    return true, v
  end
  if not need(R, 2, d[1]) then return false end
  local v = R.tvb(R.pos, 2):int()
  R.pos = R.pos + 2
  return true, v
end

local function element_min_size(d)
  local fixed = {[INT8] = 1, [BOOL] = 1, [INT16] = 2, [UINT16] = 2, [INT32] = 4, [UINT32] = 4, [INT64] = 8,
                 [FLOAT64] = 8, [UUID] = 16}
  local t = d[4]
  if fixed[t] then return fixed[t] end
  if t == STRING then return has(d[5], COMPACT) and 1 or 2 end
  if t == BYTES then return has(d[5], COMPACT) and 1 or 4 end
  if t == STRUCT then return S[d[6] + 1][6] end
  return 1
end

local function structure(R, tree, sidx, abbrev, depth, path)
  local s = S[sidx + 1]
  for i = 0, s[2] - 1 do
    if not decode_field(R, tree, s[1] + i, abbrev, depth, path, nil) then return false end
  end
  if not s[5] then return true end
  -- Tagged fields: count, then tag, size, data each.
  local at = R.pos
  local count, err = uvarint(R)
  if not count then
    return fail(R, at, err == "overlong" and "overlong tagged field count" or "tagged field count runs past the end")
  end
  if count > R.stop - R.pos then return fail(R, at, "tagged field count " .. count .. " exceeds the bytes left") end
  for i = 0, count - 1 do
    local fstart = R.pos
    local tag = uvarint(R)
    if not tag then return fail(R, fstart, "bad tag varint in tagged field " .. i) end
    local size_at = R.pos
    local size = uvarint(R)
    if not size then return fail(R, size_at, "bad size varint in tagged field " .. i) end
    if size > R.stop - R.pos then
      return fail(R, fstart, "tagged field " .. tag .. ": size " .. size .. " exceeds the " .. (R.stop - R.pos) .. " bytes left")
    end
    local fend = R.pos + size
    local known = nil
    for k = 0, s[4] - 1 do
      if D[s[3] + k + 1][7] == tag then known = s[3] + k end
    end
    if not known then
      local it = tree:add(f_unknown_tag, R.tvb(R.pos, size))
      it:set_text(string.format("UnknownTaggedField[tag %d]: %d bytes", tag, size))
      it:add(f_unknown_tag_number, R.tvb(fstart, 0), tag):set_generated()
      R.pos = fend
    else
      local saved = R.stop
      R.stop = fend
      local ok = decode_field(R, tree, known, abbrev, depth, path, nil)
      R.stop = saved
      if not ok then return false end
      if R.pos ~= fend then
        return fail(R, R.pos, "tagged field " .. tag .. " (" .. D[known + 1][1] .. "): " .. (fend - R.pos) ..
          " bytes left unread of " .. size)
      end
    end
  end
  return true
end

local function add_value(R, tree, F, range, value)
  if F.type == "INT64" and type(value) == "number" then value = Int64(value) end
  return tree:add(F.pf, range, value)
end

-- One field (or array element, `element` its index) of a struct.
decode_field = function(R, tree, desc, parent_abbrev, depth, parent_path, element)
  local d = D[desc + 1]
  local t = element and d[4] or d[3]
  local abbrev = parent_abbrev .. "." .. d[2]
  local path = element and parent_path or (parent_path == "" and d[1] or parent_path .. "." .. d[1])
  local F = FIELDS[abbrev]
  local tvb = R.tvb
  local start = R.pos
  if not F then return fail(R, start, d[1] .. ": no field " .. abbrev) end

  local fixed = {[INT8] = 1, [BOOL] = 1, [INT16] = 2, [UINT16] = 2, [INT32] = 4, [UINT32] = 4, [INT64] = 8,
                 [FLOAT64] = 8, [UUID] = 16}
  if fixed[t] then
    local n = fixed[t]
    if not need(R, n, d[1]) then return false end
    local range = tvb(start, n)
    local value
    if t == INT8 or t == INT16 or t == INT32 then value = range:int()
    elseif t == UINT16 or t == UINT32 then value = range:uint()
    elseif t == INT64 then value = range:int64()
    elseif t == FLOAT64 then value = range:float()
    elseif t == BOOL then value = range:uint() ~= 0
    else value = uuid_text(range) end
    R.pos = start + n
    local item = add_value(R, tree, F, range, value)
    if has(d[5], ERROR_CODE) and not element and R.inner == 0 then
      note_error_code(R, tree, item, range, F, value)
      if R.stats and t == INT16 then
        -- For the statistics: the code and where it sits (a child of the
        -- body, inside a partition's entry, inside another entry).
        local errs = R.stats.errors
        errs[#errs + 1] = depth == 1 and 1 or (R.stats.partitions > 0 and 2 or 3)
        errs[#errs + 1] = value
      end
    end
    note_summary(R, depth, d, value, path, element)
    return true
  end

  if t == STRING or t == BYTES or t == RECORDS then
    local ok, len = read_length(R, d, has(d[5], COMPACT), t ~= STRING)
    if not ok then return false end
    if len < 0 then
      local range = tvb(start, R.pos - start)
      local item
      if F.type == "STRING" then item = tree:add(F.pf, range, "")
      elseif F.type == "BYTES" then item = tree:add(F.pf, tvb(R.pos, 0))
      else item = tree:add(F.pf, range) end
      item:set_text(F.name .. ": null")
      null_child(R, item)
      if len < -1 then return fail(R, start, d[1] .. ": negative length " .. len) end
      if not has(d[5], NULLABLE) then
        return fail(R, start, d[1] .. ": null in a non-nullable " .. (t == STRING and "string" or t == BYTES and "bytes" or "records"))
      end
      return true
    end
    if len > R.stop - R.pos then
      return fail(R, start, d[1] .. ": length " .. len .. " exceeds the " .. (R.stop - R.pos) .. " bytes left")
    end
    local data = R.pos
    R.pos = data + len
    local whole = tvb(start, R.pos - start)
    if has(d[5], SENSITIVE) then
      local item
      if F.type == "STRING" then item = tree:add(F.pf, whole, "") else item = tree:add(F.pf, tvb(data, 0)) end
      item:set_text(string.format("%s: <redacted %d bytes>", F.name, len))
      item:add(f_redacted, tvb(0, 0)):set_generated()
      return true
    end
    if t == STRING then
      local raw = len > 0 and tvb(data, len):raw() or ""
      local s = utf8_clean(raw)
      tree:add(F.pf, whole, s)
      note_summary(R, depth, d, s, path, element)
      if depth == 1 and not element and R.inner == 0 then R.raw[d[1]] = raw end
      if depth == 0 and R.stats and R.inner == 0 and d[1] == "ClientId" then R.stats.client_id = s end
      -- JoinGroup and SyncGroup name their protocol type before the payloads.
      if R.nest_api and d[1] == "ProtocolType" then
        R.protocol_type = raw
      end
    elseif t == BYTES then
      local item = tree:add(F.pf, tvb(data, len))
      if depth == 1 and not element and R.inner == 0 then R.blobs[d[1]] = {pos = data, len = len} end
      if R.nest_api then nested_payload(R, item, desc, abbrev, data, len) end
    else
      local item = tree:add(F.pf, whole)
      item:append_text(string.format(": %d bytes", len))
      if len > 0 then
        local saved = R.stop
        local ok2 = records(R, item, data, data + len)
        R.in_records = false
        R.stop = saved
        if not ok2 then return false end
      end
    end
    return true
  end

  if t == STRUCT then
    if has(d[5], NULLABLE) and not element then
      if not need(R, 1, d[1]) then return false end
      local marker = tvb(start, 1):int()
      R.pos = start + 1
      if marker < 0 then
        local item = tree:add(F.pf, tvb(start, 1))
        item:set_text(F.name .. ": null")
        null_child(R, item)
        return true
      end
    end
    local item = tree:add(F.pf, tvb(start, 0))
    if element then item:set_text(string.format("[%d]", element)) end
    local ok = structure(R, item, d[6], abbrev, depth + 1, path)
    item:set_len(R.pos - start)
    return ok
  end

  if t == ARRAY then
    local ok, count = read_length(R, d, has(d[5], COMPACT), true)
    if not ok then return false end
    if count < 0 then
      tree:add(tvb(start, R.pos - start), d[1] .. ": null")
      if count < -1 then return fail(R, start, d[1] .. ": negative array length " .. count) end
      if not has(d[5], NULLABLE) then return fail(R, start, d[1] .. ": null in a non-nullable array") end
      return true
    end
    local min = element_min_size(d)
    local left = R.stop - R.pos
    if count * min > left + (min == 0 and 65536 or 0) then
      return fail(R, start, d[1] .. ": array length " .. count .. " cannot fit in the " .. left .. " bytes left")
    end
    local list = tree:add(tvb(start, 0), string.format("%s (%d)", d[1], count))
    -- For the statistics: error codes inside a partition's entry.
    local stats = R.stats
    local partitions = stats ~= nil and not element and d[1]:find("Partition", 1, true) ~= nil
    if partitions then stats.partitions = stats.partitions + 1 end
    local ok = true
    for k = 0, count - 1 do
      if not decode_field(R, list, desc, parent_abbrev, depth, path, k) then
        ok = false
        break
      end
    end
    if partitions then stats.partitions = stats.partitions - 1 end
    list:set_len(R.pos - start)
    return ok
  end
  return fail(R, start, d[1] .. ": type " .. t .. " cannot appear in a message")
end

-- ---- Payloads inside payloads ---------------------------------------------------

-- Some bytes fields carry serialized Kafka structures (NESTED): an Envelope's
-- request (header, body) and its principal, the response to it, a JoinGroup
-- member's subscription and a SyncGroup assignment (consumer groups only).
-- Such a payload is shown below its bytes field when it decodes; when it does
-- not, its error is the PDU's and the outer message goes on. Tree items cannot
-- be taken back, so a payload is read first into a tree that keeps nothing.
local NOOP = setmetatable({}, {__index = function(t) return function() return t end end})
local NO_HINT = {consumer_protocol = false, inner_api_key = -1, inner_api_version = -1}
local MAX_NEST_DEPTH = 2   -- an enveloped JoinGroup's metadata, no deeper

-- Which bytes fields of the message a run reads may carry payloads: those of
-- `api` in direction `dir` (0: request, 1: response). `hint`: what the
-- message's request said (or nil).
local function nest(R, api, dir, hint, depth)
  R.nest_api = nil
  if depth < MAX_NEST_DEPTH and NESTED_APIS[api] then R.nest_api = api end
  R.nest_dir = dir
  R.hint = hint
  R.nest_depth = depth
end

-- A run over a payload's bytes, offsets still from the start of the PDU; its
-- errors go to `errs`.
local function sub_run(R, data, len, prefix, errs)
  return {tvb = R.tvb, pos = data, stop = data + len, failed = false, errs = errs, prefix = R.prefix .. prefix,
          inner = R.inner + 1, nest_depth = R.nest_depth + 1}
end

-- The message's own ProtocolType when it has one (not null), else its request's.
local function consumer_protocol(R)
  if R.protocol_type ~= nil then return R.protocol_type == "consumer" end
  return R.hint ~= nil and R.hint.consumer_protocol
end

-- A version-prefixed data struct: its version, then its fields named below
-- the bytes field `abbrev`, then the bytes its version does not describe.
-- `newest_for_unknown`: a newer version than known is read as the newest known.
local function data_struct(S, tree, abbrev, spec, newest_for_unknown)
  local start = S.pos
  local left = S.stop - S.pos
  if left < 2 then return fail(S, start, "needs a 2-byte version, " .. left .. " present") end
  local version = S.tvb(start, 2):int()
  local versions = DATA[spec] or {}
  local root = version >= 0 and versions[version] or nil
  if not root and version >= 0 and newest_for_unknown then
    local best
    for v, r in pairs(versions) do
      if v < version and (not best or v > best) then best, root = v, r end
    end
  end
  if not root then return fail(S, start, "unknown version " .. version) end
  tree:add(FIELDS[abbrev .. "." .. D[NESTED_VERSION + 1][2]].pf, S.tvb(start, 2), version)
  S.pos = start + 2
  local ok = structure(S, tree, D[root + 1][6], abbrev, 1, "")
  if ok and S.stop > S.pos then
    -- Kafka reads the fields it knows and ignores the rest.
    tree:add(FIELDS[abbrev .. "." .. D[NESTED_TRAILING + 1][2]].pf, S.tvb(S.pos, S.stop - S.pos))
    S.pos = S.stop
  end
  return ok
end

-- A whole message without size prefix: header, then body, as a top-level
-- message's. A request names its api and version in its header; a response
-- takes them from `api`, `version`.
local function inner_message(S, tree, dir, api, version)
  local tvb = S.tvb
  local start = S.pos
  local request = dir == 0
  if request then
    local left = S.stop - S.pos
    if left < 4 then return fail(S, start, "request header needs 4 bytes, " .. left .. " present") end
    api, version = tvb(start, 2):int(), tvb(start + 2, 2):int()
  end
  local m = M[api * 131072 + version * 2 + dir]
  local hv
  if m then hv = m[4]
  elseif request then hv = (api == 7 and version == 0) and 0 or 1
  else hv = 0 end
  local hd = D[(request and REQUEST_HEADER[hv] or RESPONSE_HEADER[hv]) + 1]
  local habbrev = "kwire." .. hd[2]
  local hitem = tree:add(FIELDS[habbrev].pf, tvb(start, 0))
  local ok = structure(S, hitem, hd[6], habbrev, 0, "")
  hitem:set_len(S.pos - start)
  if not ok then return false end
  if not m then
    return fail(S, start, "no spec for api key " .. api .. " v" .. version .. (request and " request" or " response"))
  end
  nest(S, api, dir, nil, S.nest_depth)   -- the enveloped message's own payloads
  local root = D[m[1] + 1]
  local babbrev = "kwire." .. root[2]
  local bstart = S.pos
  local bitem = tree:add(FIELDS[babbrev].pf, tvb(bstart, 0))
  ok = structure(S, bitem, root[6], babbrev, 1, "")
  bitem:set_len(S.pos - bstart)
  if ok and S.stop > S.pos then
    return fail(S, S.pos, (S.stop - S.pos) .. " bytes left after the end of " .. m[3] .. " v" .. version)
  end
  return ok
end

-- Reads a payload twice: into a tree that keeps nothing, to learn whether it
-- decodes, then, if it does, below the bytes item.
local function show_payload(R, item, data, len, prefix, read)
  local errs = {}
  if not read(sub_run(R, data, len, prefix, errs), NOOP) then
    for _, e in ipairs(errs) do R.errs[#R.errs + 1] = e end
    return
  end
  read(sub_run(R, data, len, prefix, R.errs), item)
end

-- The bytes field `desc` (field `abbrev`, shown as `item`) of the message R reads.
nested_payload = function(R, item, desc, abbrev, data, len)
  local p = NESTED[desc]
  if not p or p[3] ~= R.nest_api or p[4] ~= R.nest_dir then return end
  if p[2] and not consumer_protocol(R) then return end
  if len == 0 and p[5] then return end   -- a failed SyncGroup's empty assignment, say
  local name = D[desc + 1][1]
  if p[1] == "request" then
    show_payload(R, item, data, len, name .. ": ", function(S, tree) return inner_message(S, tree, 0) end)
  elseif p[1] == "response" then
    local h = R.hint
    if h and h.inner_api_key >= 0 then
      show_payload(R, item, data, len, name .. ": ",
        function(S, tree) return inner_message(S, tree, 1, h.inner_api_key, h.inner_api_version) end)
    end
  else
    show_payload(R, item, data, len, name .. " (" .. p[1] .. "): ",
      function(S, tree) return data_struct(S, tree, abbrev, p[1], p[2]) end)
  end
end

-- ---- Summary line (as kwire decode prints it) ------------------------------------

local SUMMARY = {{"GroupId", "group"}, {"MemberId", "member"}, {"MemberEpoch", "epoch"},
                 {"GenerationId", "generation"}, {"TopologyEpoch", "topologyEpoch"}, {"TransactionalId", "txn"},
                 {"ErrorCode", "error"}}

local function summary(R, info)
  if info.not_kafka then return "Not Kafka: " .. info.note end
  local o = {}
  if R.api_name then o[#o + 1] = R.api_name elseif R.api_key then o[#o + 1] = "ApiKey " .. R.api_key end
  if R.api_key then o[#o + 1] = " v" .. R.api_version .. " " end
  o[#o + 1] = info.request and "Request" or "Response"
  o[#o + 1] = " corr=" .. R.corr
  if info.unmatched then o[#o + 1] = " (unmatched: request not captured)" end
  if R.body_decoded then
    if R.top.GroupId == nil and #R.groups > 0 then
      o[#o + 1] = " group=" .. R.groups[1]
      if #R.groups > 1 then o[#o + 1] = "(+" .. (#R.groups - 1) .. ")" end
    end
    for _, sf in ipairs(SUMMARY) do
      local v = R.top[sf[1]]
      if v ~= nil then
        if sf[1] == "ErrorCode" and ERROR_NAMES[v] then v = ERROR_NAMES[v] end
        o[#o + 1] = " " .. sf[2] .. "=" .. tostring(v)
      end
    end
    if R.nested_error then
      o[#o + 1] = " " .. R.nested_error.path .. "=" .. (ERROR_NAMES[R.nested_error.value] or "")
    end
  end
  for _, e in ipairs(R.errs) do o[#o + 1] = string.format(" [malformed at offset %d: %s]", e.offset, e.reason) end
  return table.concat(o)
end

-- ---- Connections ---------------------------------------------------------------

local f_tcp_stream = Field.new("tcp.stream")
local connections = {}     -- connection_key() -> {server, stream, pending, dead, sasl_raw}
local pdu_infos = {}       -- frame number -> list of what the first pass learnt, per PDU
-- "address:port" of endpoints that answered Kafka requests, on plain TCP
-- (known_brokers[false]) and inside TLS (known_brokers[true]) apart: a broker
-- port learnt from decrypted TLS is a TLS port, and its next connections
-- belong to Wireshark's TLS dissector first.
local known_brokers = {[false] = {}, [true] = {}}
-- connection_key() -> {stream}: TCP connections that kwire passes on to TLS
-- (see kwire.dissector).
local tls_handoffs = {}
-- Group id -> whether its JoinGroup requests named protocol type "consumer",
-- learnt on the first pass in packet order: a SyncGroup before v5 does not
-- say. Forgotten wholesale when it gets large.
local consumer_groups, consumer_group_count = {}, 0
local MAX_GROUPS = 65536

function kwire.init()
  connections = {}
  pdu_infos = {}
  known_brokers = {[false] = {}, [true] = {}}
  tls_handoffs = {}
  consumer_groups, consumer_group_count = {}, 0
end

local function endpoint(addr, port) return tostring(addr) .. ":" .. tostring(port) end

-- A connection is known by its two endpoints, which every pass has (pinfo).
-- tcp.stream is not enough: a field extractor gives nothing when tshark
-- dissects without a tree, as the first pass of `tshark -2` does; where it
-- is there (one pass, Wireshark), it tells a connection that reuses the
-- endpoints of an earlier one from that one.
local function connection_key(pinfo)
  local a, b = endpoint(pinfo.src, pinfo.src_port), endpoint(pinfo.dst, pinfo.dst_port)
  if a < b then return a .. " " .. b end
  return b .. " " .. a
end

local function tcp_stream()
  local f = f_tcp_stream()
  return f and f.value
end

-- What `by_key` holds for this packet's connection: kept by its endpoints,
-- and not an earlier connection's that used the same ones (its `stream`).
local function of_connection(by_key, pinfo)
  local c = by_key[connection_key(pinfo)]
  if c and not pinfo.visited and c.stream ~= nil then
    local stream = tcp_stream()
    if stream ~= nil and stream ~= c.stream then return nil end
  end
  return c
end

local function connection_of(pinfo) return of_connection(connections, pinfo) end

-- `tls`: whether the connection is inside TLS (kwire reads what Wireshark's
-- TLS dissector decrypted) or on plain TCP.
local function new_connection(pinfo, dst_is_server, tls)
  local c = {server = dst_is_server and endpoint(pinfo.dst, pinfo.dst_port) or endpoint(pinfo.src, pinfo.src_port),
             stream = tcp_stream(), pending = {}, dead = {false, false}, tls = tls}
  connections[connection_key(pinfo)] = c
  return c
end

-- The PDUs kwire has dissected so far in this dissection of the frame, all
-- calls counted: TLS calls kwire once per record, and one frame may carry
-- several records, each ending a message. pinfo.private lasts one
-- dissection of one frame.
local function next_pdu_index(pinfo)
  local n = (tonumber(pinfo.private.kwire_pdus) or 0) + 1
  pinfo.private.kwire_pdus = tostring(n)
  return n
end

-- ---- Statistics: what each PDU gives them -----------------------------------------

-- The statistics (-z kwire,srt and -z kwire,tree, and their windows) read,
-- for each frame, a plain record per PDU that kwire decoded in this
-- dissection of the frame (stats_pdus, of frame stats_frame): the Lua
-- version of the C plugin's tap records. Made only while a statistics
-- listener is active (stats_users).
local stats_users = 0
local stats_frame, stats_pdus = nil, nil

-- The time from a matched response's request to it, in nanoseconds.
-- pinfo.abs_ts is a double: near 1.7e9 s it keeps a quarter microsecond;
-- rel_ts (since the first frame) keeps nanoseconds, unless a time reference
-- between the two frames moved it.
local function response_time_ns(pinfo, info)
  local abs = pinfo.abs_ts - info.request_ts
  local d = abs
  if info.request_rel then
    local rel = pinfo.rel_ts - info.request_rel
    if math.abs(rel - abs) < 2e-6 then d = rel end
  end
  return math.floor(d * 1e9 + 0.5)
end

-- The record of a decoded PDU (the C plugin's TapPdu).
local function stats_record(R, info, pinfo)
  local rec = {request = info.request, api_key = -1, api_version = -1}
  if info.request then
    rec.api_key, rec.api_version = R.api_key or -1, R.api_version or -1
  else
    rec.api_key, rec.api_version = info.api or -1, info.version or -1
  end
  if info.not_kafka then
    rec.not_kafka = info.note or "not Kafka"
    return rec
  end
  rec.unmatched = not info.request and info.unmatched == true
  rec.matched = not info.request and not info.unmatched and info.peer_frame ~= nil
  rec.malformed = #R.errs > 0
  if rec.matched then rec.srt = response_time_ns(pinfo, info) end
  if info.request then rec.client_id = R.stats.client_id end
  rec.errors = R.stats.errors   -- level, code, level, code...
  return rec
end

local function plausible_request(tvb)
  if tvb:captured_len() < 14 then return false end
  local size = tvb(0, 4):int()
  if size < 10 or size > MAX_MESSAGE then return false end
  local api, version = tvb(4, 2):int(), tvb(6, 2):int()
  if not M[api * 131072 + version * 2] then return false end
  local client_len = tvb(12, 2):int()
  return client_len >= -1 and client_len <= size - 10
end

local function classify(c, pinfo, tvb, info)
  local side = info.request and 1 or 2
  local len = tvb:len()
  local size = len >= 4 and tvb(0, 4):int() or 0
  if c.dead[side] then
    info.not_kafka = true
    info.note = c.dead_note or "the rest of this direction is not decoded"
    return
  end
  if size < 0 or size > MAX_MESSAGE then
    c.dead[side] = true
    return
  end
  if c.sasl_raw then
    info.not_kafka = true
    info.note = "SASL token after SaslHandshake v0"
    return
  end
  if info.request then
    if len >= 12 then
      if #c.pending >= 4096 then table.remove(c.pending, 1) end
      c.pending[#c.pending + 1] = {corr = tvb(8, 4):int(), api = tvb(4, 2):int(), version = tvb(6, 2):int(),
                                   info = info, frame = pinfo.number, ts = pinfo.abs_ts, rel = pinfo.rel_ts}
    end
    return
  end
  local corr = len >= 8 and tvb(4, 4):int() or 0
  for i, p in ipairs(c.pending) do
    if p.corr == corr then
      info.api, info.version, info.peer_frame, info.request_ts, info.request_rel = p.api, p.version, p.frame, p.ts, p.rel
      info.hint = p.info.hint   -- what the request said about the response's payloads
      p.info.peer_frame = pinfo.number
      for _ = 1, i do table.remove(c.pending, 1) end
      return
    end
  end
  info.unmatched = true
end

-- A run over a whole PDU from its header on.
local function new_run(tvb, len)
  return {tvb = tvb, pos = 4, stop = len, failed = false, errs = {}, prefix = "", inner = 0, nest_depth = 0,
          error_fields = 0, errors = 0, top = {}, groups = {}, raw = {}, blobs = {}, corr = 0}
end

-- The header, then the body when the api and version are known. `hint`: what
-- the message's request said about its payloads (nil for most requests).
local function decode_message(R, top, request, program, hint)
  local tvb = R.tvb
  local hv
  if program then hv = program[4]
  elseif request then hv = 1
  else hv = 0 end
  local hdesc = request and REQUEST_HEADER[hv] or RESPONSE_HEADER[hv]
  local hd = D[hdesc + 1]
  local hitem = top:add(FIELDS["kwire." .. hd[2]].pf, tvb(4, 0))
  local hstart = R.pos
  local ok = structure(R, hitem, hd[6], "kwire." .. hd[2], 0, "")
  hitem:set_len(R.pos - hstart)
  if not ok then return end
  nest(R, R.api_key, request and 0 or 1, hint, 0)
  if not program then
    if request then
      local lo, hi = nil, nil
      for k, _ in pairs(M) do
        if math.floor(k / 131072) == R.api_key and k % 2 == 0 then
          local v = (k % 131072) / 2
          if not lo or v < lo then lo = v end
          if not hi or v > hi then hi = v end
        end
      end
      if lo then
        fail(R, 6, string.format("unknown version %d of %s (known: %d-%d)", R.api_version,
          API_NAMES[R.api_key] or "?", lo, hi))
      else
        fail(R, 4, "unknown api key " .. R.api_key)
      end
    else
      fail(R, R.pos, "no spec for " .. R.api_key .. " v" .. R.api_version .. " response")
    end
    return
  end
  local root = D[program[1] + 1]
  local babbrev = "kwire." .. root[2]
  local bitem = top:add(FIELDS[babbrev].pf, tvb(R.pos, 0))
  local bstart = R.pos
  R.body_decoded = true
  structure(R, bitem, root[6], babbrev, 1, "")
  bitem:set_len(R.pos - bstart)
  if not R.failed and R.pos < R.stop then
    fail(R, R.pos, (R.stop - R.pos) .. " bytes left after the end of " .. program[3] .. " v" .. R.api_version)
  end
end

-- What the response to a decoded request needs to read its payloads: whether
-- the request's ProtocolType is "consumer"; the api key and version an
-- Envelope's RequestData starts with.
local function response_hint(R)
  local h = {consumer_protocol = false, inner_api_key = -1, inner_api_version = -1}
  if not R.body_decoded then return h end
  if R.api_key == 11 or R.api_key == 14 then
    h.consumer_protocol = R.raw.ProtocolType == "consumer"
  elseif R.api_key == 58 then
    local data = R.blobs.RequestData
    if data and data.len >= 4 then
      h.inner_api_key, h.inner_api_version = R.tvb(data.pos, 2):int(), R.tvb(data.pos + 2, 2):int()
    end
  end
  return h
end

-- First pass of a decoded request (not a SyncGroup before v5): what a
-- JoinGroup teaches about its group, and what the response needs.
local function learn_request(R)
  local group, ptype = R.raw.GroupId, R.raw.ProtocolType
  if R.api_key == 11 and group ~= nil and ptype ~= nil then
    if consumer_group_count >= MAX_GROUPS then consumer_groups, consumer_group_count = {}, 0 end
    if consumer_groups[group] == nil then consumer_group_count = consumer_group_count + 1 end
    consumer_groups[group] = ptype == "consumer"
  end
  return response_hint(R)
end

-- A SyncGroup before v5 (and its response): consumer protocol payloads when
-- its group's JoinGroup named protocol type "consumer".
local function sync_group_hint(R)
  local group = R.raw.GroupId
  return {consumer_protocol = group ~= nil and consumer_groups[group] == true, inner_api_key = -1,
          inner_api_version = -1}
end

local function dissect_pdu(tvb, pinfo, tree)
  local c = connection_of(pinfo)
  if not c then return 0 end
  local pdu_index = next_pdu_index(pinfo)
  local first_pass = not pinfo.visited
  if stats_users > 0 and pdu_index == 1 then stats_frame, stats_pdus = pinfo.number, {} end
  local infos = pdu_infos[pinfo.number]
  if not infos then
    infos = {}
    pdu_infos[pinfo.number] = infos
  end
  local info = infos[pdu_index]
  if not info then
    if not first_pass then return tvb:len() end
    info = {request = endpoint(pinfo.dst, pinfo.dst_port) == c.server}
    infos[pdu_index] = info
    classify(c, pinfo, tvb, info)
  end

  local len = tvb:captured_len()
  local size = len >= 4 and tvb(0, 4):int() or 0
  local R = new_run(tvb, len)
  if stats_users > 0 then R.stats = {errors = {}, partitions = 0} end
  pinfo.cols.protocol = "kwire"
  local top = tree:add(kwire, tvb())
  top:add(f_length, tvb(0, math.min(4, len)), size)
  top:add(f_direction, tvb(0, 0), info.request and 0 or 1):set_generated()

  local program
  if info.not_kafka then
    top:add(f_not_kafka, tvb(), info.note):add_proto_expert_info(ei_not_kafka, "Not Kafka: " .. info.note)
  elseif size < 0 or size > MAX_MESSAGE then
    if info.request and len >= 12 then
      R.api_key, R.api_version, R.corr = tvb(4, 2):int(), tvb(6, 2):int(), tvb(8, 4):int()
      local m = M[R.api_key * 131072 + R.api_version * 2]
      if m then R.api_name = m[2] end
    elseif len >= 8 then
      R.corr = tvb(4, 4):int()
    end
    fail(R, 0, "size prefix " .. size .. " is not a plausible Kafka message size; the rest of this direction is not decoded")
  elseif size ~= len - 4 then
    fail(R, 0, "size prefix " .. size .. " does not match the " .. (len - 4) .. " bytes that follow")
  elseif info.request then
    if len < 12 then
      fail(R, 4, "request header needs 8 bytes, " .. (len - 4) .. " present")
    else
      R.api_key, R.api_version, R.corr = tvb(4, 2):int(), tvb(6, 2):int(), tvb(8, 4):int()
      program = M[R.api_key * 131072 + R.api_version * 2]
    end
  elseif not info.unmatched then
    R.api_key, R.api_version = info.api, info.version
    if len < 8 then
      fail(R, 4, "response header needs 4 bytes, " .. (len - 4) .. " present")
    else
      R.corr = tvb(4, 4):int()
      program = M[R.api_key * 131072 + R.api_version * 2 + 1]
    end
  else
    R.corr = len >= 8 and tvb(4, 4):int() or 0
  end
  if program then R.api_name = program[2] end

  if not info.not_kafka then
    if R.api_key then
      top:add(f_api_key, tvb(4, 2), R.api_key):set_generated()
      top:add(f_api_version, tvb(6, 2), R.api_version):set_generated()
      if R.api_name then top:add(f_api_name, tvb(4, 2), R.api_name):set_generated() end
    end
    -- A request of 8 to 11 bytes has no correlation id to point at (a Lua
    -- range cannot run past the end).
    local corr_at = math.min(info.request and 8 or 4, len)
    local corr_item = top:add(f_correlation_id, tvb(corr_at, len >= corr_at + 4 and 4 or 0), R.corr)
    corr_item:set_generated()
    if info.request and info.peer_frame then top:add(f_response_in, tvb(0, 0), info.peer_frame):set_generated() end
    if not info.request and info.peer_frame then
      top:add(f_request_in, tvb(0, 0), info.peer_frame):set_generated()
      local ns = response_time_ns(pinfo, info)
      local secs = math.floor(ns / 1e9)
      top:add(f_time, tvb(0, 0), NSTime.new(secs, ns - secs * 1e9)):set_generated()
    end
    if info.unmatched then corr_item:add_proto_expert_info(ei_unmatched) end

    if not R.failed and R.api_key and (info.request or not info.unmatched) then
      local hint
      if info.request then
        local old_sync = R.api_key == 14 and R.api_version < 5 and program ~= nil
        if first_pass and old_sync then
          -- A SyncGroup before v5 names no protocol type: its group's JoinGroup
          -- did. Its group id first, from a reading that shows nothing.
          local P = new_run(tvb, len)
          P.api_key, P.api_version = R.api_key, R.api_version
          decode_message(P, NOOP, true, program, nil)
          info.hint = sync_group_hint(P)
        end
        if old_sync and info.hint and info.hint.consumer_protocol then hint = info.hint end
        decode_message(R, top, true, program, hint)
        if first_pass and not old_sync then info.hint = learn_request(R) end
      else
        decode_message(R, top, false, program, info.hint or NO_HINT)
      end
      if R.body_decoded then
        if first_pass and R.api_key == 17 and R.api_version == 0 and #R.errs == 0 and R.top.ErrorCode == 0 then
          c.sasl_raw = true
        end
        if R.error_fields > 0 and R.errors == 0 then
          local e = top:add(f_error_code, tvb(0, 0), 0)
          e:set_generated()
          e:set_hidden()
        end
      end
    end
    if first_pass and not info.request and not info.unmatched then
      known_brokers[c.tls][endpoint(pinfo.src, pinfo.src_port)] = true
    end
  end

  if R.stats and stats_frame == pinfo.number then stats_pdus[#stats_pdus + 1] = stats_record(R, info, pinfo) end
  local text = summary(R, info)
  top:append_text(", " .. text)
  if pdu_index == 1 then pinfo.cols.info = text else pinfo.cols.info:append(" | " .. text) end
  -- The PDU's first error, a payload's included.
  local first = R.errs[1]
  if first then
    top:add_proto_expert_info(ei_malformed, string.format("Malformed Kafka message at offset %d: %s",
      math.min(first.offset, len), first.reason))
  end
  return tvb:len()
end

local function pdu_length(tvb, pinfo, offset)
  -- Fewer than 4 bytes reach here only where nothing reassembles.
  if tvb:len() - offset < 4 then return tvb:len() - offset end
  local size = tvb(offset, 4):int()
  if size < 0 or size > MAX_MESSAGE then return tvb:len() - offset end
  return size + 4
end

-- A TLS record header (content type 20-23, version 3.0-3.4, a length TLS
-- allows): read as a Kafka size prefix it is more than 335 MB, past
-- MAX_MESSAGE, so no Kafka stream starts like this.
local function looks_like_tls(tvb)
  if tvb:captured_len() < 5 then return false end
  local t = tvb(0, 1):uint()
  return t >= 0x14 and t <= 0x17 and tvb(1, 1):uint() == 3 and tvb(2, 1):uint() <= 4 and
    tvb(3, 2):uint() <= 16384 + 2048
end

-- Whether a dissector-table call is on decrypted TLS: Wireshark's TLS
-- dissector calls kwire through tls.port (Decode As tls.port==P,kwire), TCP
-- through tcp.port. Lua has no pinfo.layers to ask; a Dissector shows as its
-- protocol's short name.
local tls_port_table = DissectorTable.get("tls.port")
local kwire_handle_name
local function on_tls_port(port)
  if not kwire_handle_name then
    local found, handle = pcall(Dissector.get, "kwire")
    kwire_handle_name = found and handle and tostring(handle) or "KWIRE"
  end
  local found, handle = pcall(tls_port_table.get_dissector, tls_port_table, port)
  return found and handle ~= nil and tostring(handle) == kwire_handle_name
end

-- The heuristics below call this function itself, not kwire.dissector: read
-- back, that is kwire's dissector handle, and a call through a handle is
-- one more dissector layer, which takes the reassembly that TCP or TLS
-- offers away (pinfo.can_desegment counts down per layer). Inside TLS every
-- record comes through the heuristic, so a message spanning records would
-- reach dissect_pdu cut.
local function dissect(tvb, pinfo, tree)
  local c = connection_of(pinfo)
  if not c then
    -- Never Kafka (see looks_like_tls); TLS on plain TCP goes to Wireshark's
    -- TLS dissector (kwire.dissector below).
    if looks_like_tls(tvb) then return 0 end
    -- A port of tcp.port or tls.port (decrypted TLS) is the broker's.
    local tls = on_tls_port(pinfo.match_uint)
    c = new_connection(pinfo, pinfo.dst_port == 9092 or pinfo.match_uint == pinfo.dst_port or
      known_brokers[tls][endpoint(pinfo.dst, pinfo.dst_port)] ~= nil, tls)
  end
  dissect_tcp_pdus(tvb, tree, 4, pdu_length, dissect_pdu, true)
  return tvb:len()
end

-- TLS on a port of tcp.port (9092, Decode As tcp.port==P,kwire) is not
-- kwire's: its connection goes to Wireshark's TLS dissector, which decrypts
-- it (given a key log) and hands kwire the Kafka inside (tls_heuristic
-- below), as the C plugin does. Lua cannot give the TCP conversation to TLS
-- (pinfo.conversation takes a Lua Proto only), so the conversation becomes
-- kwire's and kwire passes each segment on to TLS, with the reassembly TCP
-- offers (a call through a handle is one more layer, which takes it away:
-- can_desegment given back one, as Wireshark's SOCKS dissector does).
-- Merely rejecting the first segment would leave it to the port tables and
-- TCP's heuristics, where a dissector on the client port (EtherCAT's on
-- 34980, say) can take it before TLS's heuristic.
local tls_handle = nil
do
  local found, handle = pcall(Dissector.get, "tls")
  if found then tls_handle = handle end
end
local in_tls_handoff = false

local function tls_handoff_of(pinfo) return of_connection(tls_handoffs, pinfo) end

-- Called by the dissector tables (tcp.port, tls.port) and as the
-- conversation's dissector.
kwire.dissector = function(tvb, pinfo, tree)
  -- A table call while kwire passes a segment on to TLS comes from inside it
  -- (tls.port==P,kwire with the same port in tcp.port).
  if tls_handle and not in_tls_handoff then
    local h = next(tls_handoffs) ~= nil and tls_handoff_of(pinfo) or nil
    if not h and looks_like_tls(tvb) and not connection_of(pinfo) then
      h = {stream = tcp_stream()}
      tls_handoffs[connection_key(pinfo)] = h
      pinfo.conversation = kwire
    end
    if h then
      local can = pinfo.can_desegment
      if can > 0 then pinfo.can_desegment = can + 1 end
      in_tls_handoff = true
      local ok, len = pcall(tls_handle.call, tls_handle, tvb, pinfo, tree)
      in_tls_handoff = false
      pinfo.can_desegment = can
      if not ok then error(len, 0) end
      return len
    end
  end
  return dissect(tvb, pinfo, tree)
end

-- Any port: a connection is Kafka when its first bytes are a request kwire
-- knows, or when it talks to a broker endpoint already seen answering on the
-- same layer (`tls`: inside TLS, else plain TCP). A TCP segment that starts
-- with a TLS record is never taken: the TLS dissector's, whatever its port.
local function recognise(tvb, pinfo, tls)
  if not connection_of(pinfo) then
    if not kwire.prefs.heuristic then return false end
    if not tls and looks_like_tls(tvb) then return false end
    local brokers = known_brokers[tls]
    local dst_broker = brokers[endpoint(pinfo.dst, pinfo.dst_port)] ~= nil
    local src_broker = not dst_broker and brokers[endpoint(pinfo.src, pinfo.src_port)] ~= nil
    if not dst_broker and not src_broker then
      if not plausible_request(tvb) then return false end
      dst_broker = true
    end
    new_connection(pinfo, dst_broker, tls)
  end
  return true
end

local function heuristic(tvb, pinfo, tree)
  if not recognise(tvb, pinfo, false) then return false end
  pinfo.conversation = kwire
  dissect(tvb, pinfo, tree)
  return true
end

-- Inside TLS (Wireshark decrypts with a key log): the TCP conversation stays TLS's.
local function tls_heuristic(tvb, pinfo, tree)
  if not recognise(tvb, pinfo, true) then return false end
  dissect(tvb, pinfo, tree)
  return true
end

DissectorTable.get("tcp.port"):add(9092, kwire)
kwire:register_heuristic("tcp", heuristic)
DissectorTable.get("tls.port"):add_for_decode_as(kwire)
kwire:register_heuristic("tls", tls_heuristic)

-- ---- Statistics ------------------------------------------------------------------

-- The C plugin's statistics, from the records dissect_pdu makes (see
-- stats_record): Service Response Time (tshark -z kwire,srt) and the Kafka
-- stats tree (tshark -z kwire,tree), printed as Wireshark prints those of
-- the C plugin. Lua cannot register into Wireshark's SRT or stats_tree
-- frameworks: a frame tap listener counts, and draws the same text (tshark)
-- or shows it in a text window (Wireshark: Statistics > Kafka (kwire.lua)).

local SRT_VERSIONS = 64
local SRT_APIS = 0        -- rows of the table by API: 0 to the highest api key known
for key in pairs(API_NAMES) do
  if key + 1 > SRT_APIS then SRT_APIS = key + 1 end
end
-- The table by API and version: a row for each version of each api key up
-- to the newest request the specs know, numbered in api key and version
-- order. SRT_ROW[api key * SRT_VERSIONS + version] = row; SRT_ROW_NAME[row].
local SRT_ROW, SRT_ROW_NAME = {}, {}
do
  local newest = {}
  for k in pairs(M) do
    if k % 2 == 0 then
      local key, version = math.floor(k / 131072), (k % 131072) / 2
      if not newest[key] or version > newest[key] then newest[key] = version end
    end
  end
  local rows = 0
  for key = 0, SRT_APIS - 1 do
    for version = 0, math.min(newest[key] or -1, SRT_VERSIONS - 1) do
      SRT_ROW[key * SRT_VERSIONS + version] = rows
      SRT_ROW_NAME[rows] = (API_NAMES[key] or ("api " .. key)) .. " v" .. version
      rows = rows + 1
    end
  end
end

local function api_label(key) return API_NAMES[key] or ("api " .. key) end

-- A time as Wireshark's tshark prints an nstime: seconds, then microseconds
-- rounded (C division, toward zero).
local function trunc(x) if x >= 0 then return math.floor(x) end return -math.floor(-x) end
local function srt_time(ns)
  local secs = trunc(ns / 1e9)
  return secs, trunc((ns - secs * 1e9 + 500) / 1000)
end

local function srt_add(rows, index, ns)
  local r = rows[index]
  if not r then
    r = {num = 0, min = ns, max = ns, tot = 0}
    rows[index] = r
  end
  if ns < r.min then r.min = ns end
  if ns > r.max then r.max = ns end
  r.tot = r.tot + ns
  r.num = r.num + 1
end

-- Wireshark's ui/cli/tap-srt.c layout: a table per way of counting, a row
-- per API (indexed by api key) and per API and version (SRT_ROW) with
-- exchanges.
local function srt_table(out, filter, column, rows, name_of)
  out[#out + 1] = "Filter: " .. filter .. "\n"
  out[#out + 1] = string.format("Index  %-22s Calls    Min SRT    Max SRT    Avg SRT    Sum SRT\n", column)
  local keys = {}
  for k in pairs(rows) do keys[#keys + 1] = k end
  table.sort(keys)
  for _, k in ipairs(keys) do
    local r = rows[k]
    local sum = math.floor((r.tot + 500) / 1000)
    local avg = math.floor((math.floor(r.tot / r.num) + 500) / 1000)
    local min_s, min_us = srt_time(r.min)
    local max_s, max_us = srt_time(r.max)
    out[#out + 1] = string.format("%5d  %-22s %6d %3d.%06d %3d.%06d %3d.%06d %3d.%06d\n", k, name_of(k), r.num,
      min_s, min_us, max_s, max_us, math.floor(avg / 1e6), avg % 1e6, math.floor(sum / 1e6), sum % 1e6)
  end
end

local function new_srt()
  local self = {}
  local by_api, by_version
  function self.reset() by_api, by_version = {}, {} end
  self.reset()
  function self.frame(_, pdus)
    for _, p in ipairs(pdus) do
      if p.matched and p.api_key >= 0 and p.api_key < SRT_APIS then
        srt_add(by_api, p.api_key, p.srt)
        local row = p.api_version >= 0 and p.api_version < SRT_VERSIONS and SRT_ROW[p.api_key * SRT_VERSIONS + p.api_version]
        if row then srt_add(by_version, row, p.srt) end
      end
    end
  end
  function self.text()
    local out = {"\n", string.rep("=", 67), "\n", "kwire SRT Statistics:\n"}
    srt_table(out, "kwire.api_key", "API", by_api, api_label)
    out[#out + 1] = "\n"
    srt_table(out, "", "API and version", by_version, function(row) return SRT_ROW_NAME[row] end)
    out[#out + 1] = string.rep("=", 66) .. "\n"
    return table.concat(out)
  end
  return self
end

-- The stats tree: nodes counted as Wireshark's stats_tree counts them
-- (epan/stats_tree.c), with its rate, percent and burst columns (the burst
-- preferences at their defaults: 5 ms buckets, a 100 ms window).
local ST_TOPS = {"Requests by API and version", "Responses by API and version",
                 "Responses whose request is not in the capture", "Error codes (top level), by API",
                 "Error codes (per partition), by API", "Error codes (per topic, group or other entry), by API",
                 "Requests by client id and API", "Malformed messages by API", "Not Kafka segments, by reason"}
local ST_REQ, ST_RESP, ST_UNMATCHED, ST_ERRORS, ST_CLIENTS, ST_MALFORMED, ST_NOT_KAFKA = 1, 2, 3, 4, 7, 8, 9
local BURST_RESOLUTION, BURST_WINDOW = 5, 100

local function st_node(name, parent)
  local head = {count = 0, no = 0, start = 0}
  return {name = name, parent = parent, count = 0, children = {}, index = {}, bh = head, bt = head, bcount = 0,
          max_burst = 0, burst_time = -1}
end

-- update_burst_calc of epan/stats_tree.c: counts per 5 ms bucket, the
-- highest sum over a 100 ms window and where it started.
local function burst(node, now)
  local current = math.floor(now / BURST_RESOLUTION)
  local window = BURST_WINDOW / BURST_RESOLUTION
  if current > node.bt.no then
    local b = {count = 1, no = current, start = now, prev = node.bt}
    node.bt.next = b
    node.bt = b
    node.bcount = node.bcount + 1
    while current >= node.bh.no + window do
      local old = node.bh
      node.bh = old.next
      node.bh.prev = nil
      node.bcount = node.bcount - old.count
    end
  elseif current < node.bh.no then
    if current + window > node.bt.no then
      local b = {count = 1, no = current, start = now, next = node.bh}
      node.bh.prev = b
      node.bh = b
      node.bcount = node.bcount + 1
    end
  else
    local search = node.bt
    while current < search.no do search = search.prev end
    if current == search.no then
      search.count = search.count + 1
      if search.start > now then search.start = now end
    else
      local b = {count = 1, no = current, start = now, prev = search, next = search.next}
      search.next = b
      b.next.prev = b
    end
    node.bcount = node.bcount + 1
  end
  if node.bcount > node.max_burst then
    node.max_burst = node.bcount
    node.burst_time = node.bh.start
  end
end

-- strcmp, as stats_tree sorts names (its preference st_sort_casesensitive
-- is on by default); Lua's own string comparison follows the locale.
local function byte_cmp(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = a:byte(i), b:byte(i)
    if x ~= y then return x - y end
  end
  return #a - #b
end

local function new_tree()
  local self = {}
  local root, tops, start, now, elapsed
  function self.reset()
    root = st_node("Kafka", nil)
    tops = {}
    for i, name in ipairs(ST_TOPS) do
      tops[i] = st_node(name, root)
      root.children[i] = tops[i]
    end
    start, now, elapsed = -1, 0, 0
  end
  self.reset()

  local function tick(node)
    node.count = node.count + 1
    burst(node, now)
    return node
  end
  -- tick_stat_node below `parent`: its child `name`, made on first use.
  local function tick_child(parent, name)
    local node = parent.index[name]
    if not node then
      node = st_node(name, parent)
      parent.index[name] = node
      parent.children[#parent.children + 1] = node
    end
    return tick(node)
  end

  local function pdu(p)
    if p.not_kafka then
      tick(tops[ST_NOT_KAFKA])
      tick_child(tops[ST_NOT_KAFKA], p.not_kafka)
      return
    end
    if p.unmatched then
      tick(tops[ST_UNMATCHED])
      return
    end
    if p.api_key < 0 then   -- a request too short or broken to name
      tick(tops[ST_MALFORMED])
      tick_child(tops[ST_MALFORMED], "(no api key)")
      return
    end
    local api = api_label(p.api_key)
    local top = p.request and tops[ST_REQ] or tops[ST_RESP]
    tick(top)
    tick_child(tick_child(top, api), "v" .. p.api_version)
    if p.request then
      tick(tops[ST_CLIENTS])
      local id = p.client_id == nil and "(null)" or (p.client_id == "" and "(empty)" or p.client_id)
      tick_child(tick_child(tops[ST_CLIENTS], id), api)
    end
    local errors = p.errors
    for level = 1, 3 do
      for i = 1, #errors, 2 do
        if errors[i] == level then
          local code = errors[i + 1]
          tick(tops[ST_ERRORS + level - 1])
          tick_child(tick_child(tops[ST_ERRORS + level - 1], ERROR_NAMES[code] or ("unknown error " .. code)), api)
        end
      end
    end
    if p.malformed then
      tick(tops[ST_MALFORMED])
      tick_child(tops[ST_MALFORMED], api)
    end
  end

  function self.frame(pinfo, pdus)
    -- nstime_to_msec(&pinfo->rel_ts), from the double Lua has.
    local rel = pinfo.rel_ts
    local secs = math.floor(rel)
    local nsecs = math.floor((rel - secs) * 1e9 + 0.5)
    now = secs * 1000 + nsecs / 1e6
    if start < 0 then start = now end
    elapsed = now - start
    for _, p in ipairs(pdus) do pdu(p) end
  end

  -- stats_tree_format_as_str(ST_FORMAT_PLAIN), children by count, highest
  -- first (ties: names in reverse byte order), as tshark sorts them.
  local function pad(text, width)
    if #text >= width then return text end
    return text .. string.rep(" ", width - #text)
  end
  local function max_name(node, indent)
    local m = #node.name + indent
    for _, child in ipairs(node.children) do
      local l = max_name(child, indent + 1)
      if l > m then m = l end
    end
    return m
  end
  local function values(node)
    local rate = elapsed ~= 0 and string.format("%.4f", node.count / elapsed) or ""
    local percent
    if node.parent.count > 0 then percent = string.format("%.2f%%", node.count * 100.0 / node.parent.count)
    elseif node.parent == root then percent = "100%"
    else percent = "" end
    local burst_rate, burst_start = "-", "-"
    if node.max_burst > 0 then
      burst_rate = string.format("%.4f", node.max_burst / BURST_WINDOW)
      burst_start = string.format("%.3f", node.burst_time / 1000.0)
    end
    return {tostring(node.count), "", "", "", rate, percent, burst_rate, burst_start}
  end
  local function format(out, node, indent, width)
    local line = {string.rep(" ", indent), pad(node.name, width - indent)}
    for _, v in ipairs(values(node)) do line[#line + 1] = " " .. pad(v, 13) end
    out[#out + 1] = table.concat(line) .. "\n"
    local children = {}
    for i, child in ipairs(node.children) do children[i] = child end
    table.sort(children, function(a, b)
      if a.count ~= b.count then return a.count > b.count end
      return byte_cmp(a.name, b.name) > 0
    end)
    for _, child in ipairs(children) do format(out, child, indent + 1, width) end
  end
  function self.text()
    local width = max_name(root, 0)
    local columns = {"Count", "Average", "Min Val", "Max Val", "Rate (ms)", "Percent", "Burst Rate", "Burst Start"}
    local sep = width + #columns * 14
    local out = {"\n", string.rep("=", sep), "\n", root.name, ":\n", pad("Topic / Item", width)}
    for _, c in ipairs(columns) do out[#out + 1] = " " .. pad(c, 13) end
    out[#out + 1] = "\n" .. string.rep("-", sep) .. "\n"
    for _, top in ipairs(tops) do format(out, top, 0, width) end
    out[#out + 1] = "\n" .. string.rep("-", sep) .. "\n"
    return table.concat(out)
  end
  return self
end

-- A listener on every frame (with the filter of -z kwire,srt,FILTER) that
-- hands `stats` the records of the frame's PDUs; `show` gets the text.
-- pinfo.private.kwire_pdus says that kwire saw PDUs in this dissection of
-- the frame, which is what stats_pdus holds.
local function listen(stats, filter, show)
  local listener = Listener.new("frame", filter)
  stats_users = stats_users + 1
  function listener.packet(pinfo)
    if stats_pdus and stats_frame == pinfo.number and pinfo.private.kwire_pdus then stats.frame(pinfo, stats_pdus) end
  end
  function listener.draw() show(stats.text()) end
  function listener.reset() stats.reset() end
  return listener
end

local function stat_filter(arg, name)
  local filter = arg:sub(#name + 1)
  if filter:sub(1, 1) == "," then filter = filter:sub(2) end
  if filter == "" then return nil end
  return filter
end

-- tshark -z kwire,srt[,FILTER] and -z kwire,tree[,FILTER], free while kwire.lua
-- is the dissector (it steps aside where the C plugin registers them).
local function write(text)
  io.write(text)
  io.stdout:flush()
end
register_stat_cmd_arg("kwire,srt", function(arg) listen(new_srt(), stat_filter(arg, "kwire,srt"), write) end)
register_stat_cmd_arg("kwire,tree", function(arg) listen(new_tree(), stat_filter(arg, "kwire,tree"), write) end)

if gui_enabled() then
  local function window(title, stats)
    local win = TextWindow.new(title)
    local listener = listen(stats, nil, function(text) win:set(text) end)
    win:set_atclose(function()
      listener:remove()
      stats_users = stats_users - 1
    end)
    retap_packets()
  end
  register_menu("Kafka (kwire.lua)/Service Response Time",
    function() window("Kafka service response time (kwire.lua)", new_srt()) end, MENU_STAT_GENERIC)
  register_menu("Kafka (kwire.lua)/Messages", function() window("Kafka messages (kwire.lua)", new_tree()) end,
    MENU_STAT_GENERIC)
end
