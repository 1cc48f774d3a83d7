"""Maps tshark's `-T json` output of the kwire dissector back to message
values, so that it can be compared with `kwire decode -T json`.

tshark's JSON (read with the key order and duplicate keys kept, as lists of
pairs) has, per kwire PDU: the generic fields (kwire.api_key, ...), the header
(kwire.request_header / kwire.response_header) and the body (kwire.<message>)
as objects of their fields. A field with a value and children appears as
"abbrev": value plus "abbrev_tree": {children}; a null field has the child
kwire.null, a secret kwire.redacted. Arrays are text subtrees labelled
"Name (count)" or "Name: null" whose children are the elements."""
import calendar
import re
from decimal import Decimal

ARRAY = re.compile(r"^(\w+) \((\d+)\)$")
NULL_ARRAY = re.compile(r"^(\w+): null$")
GENERIC = {"kwire.length", "kwire.direction", "kwire.api_key", "kwire.api_version", "kwire.api_name",
           "kwire.correlation_id", "kwire.request_in", "kwire.response_in", "kwire.time", "kwire.overlay",
           "kwire.not_kafka"}
HEADERS = ("kwire.request_header", "kwire.response_header")
RECORD_ITEMS = {"kwire.record_batch", "kwire.legacy_message", "kwire.partial_batch"}


# frame.time_epoch as tshark 4.6 writes it in -T json: an ISO 8601 date,
# "2026-11-29T20:25:01.721374654Z" (before 4.6, and in -T fields, seconds:
# "1795983901.721374654").
ISO_TIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)$")


def epoch_seconds(t):
    """A frame.time_epoch value (or any timestamp in seconds) as exact
    seconds since 1970, a Decimal with every digit tshark wrote (its
    nanoseconds), in either of tshark's forms."""
    if not isinstance(t, str):
        return Decimal(str(t))
    m = ISO_TIME.match(t.strip())
    if not m:
        return Decimal(t.strip())
    year, month, day, hour, minute, second = (int(x) for x in m.groups()[:6])
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    zone = m.group(8)
    if zone != "Z":
        hh, mm = int(zone[1:3]), int(zone[-2:])
        seconds -= (1 if zone[0] == "+" else -1) * (hh * 3600 + mm * 60)
    return Decimal(seconds) + Decimal("0." + (m.group(7) or "0"))


class Empty:
    """An item with neither value nor children: an empty struct or records."""

    def __eq__(self, other):
        return other in ({}, [], "") or isinstance(other, Empty)

    def __repr__(self):
        return "<empty>"


def norm(name):
    """Field names of both sides, comparable: memberEpoch, member_epoch -> memberepoch."""
    return name.replace("_", "").lower()


def last(abbrev):
    return abbrev.rsplit(".", 1)[-1]


def pairs_of(v):
    return v if isinstance(v, list) else []


def items(pairs):
    """(abbrev, value, tree) triples: a field's value with its _tree children."""
    out = []
    for k, v in pairs:
        if k.endswith("_tree") and out and out[-1][0] + "_tree" == k:
            out[-1] = (out[-1][0], out[-1][1], v)
            continue
        out.append((k, v, None))
    return out


def value(abbrev, v, tree):
    """The value of one field item."""
    if tree is not None:
        keys = [k for k, _ in pairs_of(tree)]
        if "kwire.null" in keys:
            return None
        if "kwire.redacted" in keys:
            return "<redacted>"
        if keys and all(k in RECORD_ITEMS for k in keys):
            return [value(k, x, t) for k, x, t in items(tree)]
        if abbrev == "kwire.unknown_tagged_field":
            tag = dict(pairs_of(tree)).get("kwire.unknown_tagged_field.tag")
            return {"tag": tag, "data": v}
        if isinstance(v, str) and any(k.startswith("kwire.") for k in keys):
            return payload(tree)   # an error code's tree holds only its expert info
    if isinstance(v, list):  # FT_NONE with children: a struct (or records)
        keys = [k for k, _ in v]
        if "kwire.null" in keys:
            return None
        if keys and all(k in RECORD_ITEMS for k in keys):
            return [value(k, x, t) for k, x, t in items(v)]
        return struct(v)
    if v == "" and tree is None:
        return Empty()  # an empty string or bytes, or a struct without fields
    return v


class Payload(dict):
    """The fields of a payload decoded inside a bytes field."""


def payload(tree):
    """A payload decoded inside a bytes field, as kwire's JSON writes it: a
    data struct's fields (its version among them), or an enveloped message
    as {"header": ..., "body": ...}."""
    pairs = pairs_of(tree)
    if any(k in HEADERS for k, _ in pairs):
        (hk, hv), (bk, bv) = pairs[0], pairs[1]
        return Payload(header=struct(hv) if isinstance(hv, list) else {},
                       body=struct(bv) if isinstance(bv, list) else {})
    return Payload(struct(pairs))


def struct(pairs):
    """A struct's fields, by normalized name, in wire order."""
    out = {}
    unknown = []
    for k, v, tree in items(pairs):
        if k in ("kwire.error_code", "_ws.expert") or k in GENERIC:
            continue
        if k == "kwire.unknown_tagged_field":
            unknown.append(value(k, v, tree))
            continue
        m = ARRAY.match(k)
        if m:
            out[norm(m.group(1))] = [value(ek, ev, et) for ek, ev, et in items(pairs_of(v))]
            continue
        m = NULL_ARRAY.match(k)
        if m:
            out[norm(m.group(1))] = None
            continue
        out[norm(last(k))] = value(k, v, tree)
    if unknown:
        out[norm("_unknownTaggedFields")] = unknown
    return out


def expert_messages(pairs):
    out = []
    for k, v in pairs:
        if k == "_ws.expert":
            d = dict(pairs_of(v))
            out.append((next((x for x in d if not x.startswith("_ws.")), ""), d.get("_ws.expert.message", "")))
        elif isinstance(v, list):
            out += expert_messages(v)
    return out


def pdus(packets):
    """Every kwire PDU of tshark's JSON, in order: dicts with the frame
    number, time (epoch seconds, a Decimal), generic fields, header, body and
    expert infos."""
    out = []
    for pkt in packets:
        src = dict(pkt)["_source"]
        layers = dict(src)["layers"]
        frame = dict(dict(layers)["frame"])
        for k, v in layers:
            if k != "kwire":
                continue
            for pdu in (v if v and isinstance(v[0], list) else [v]):
                g = {}
                header = body = None
                for fk, fv, ft in items(pdu):
                    if fk in GENERIC:
                        g[fk] = fv
                    elif fk in HEADERS:
                        header = struct(fv) if isinstance(fv, list) else {}
                    elif fk.startswith("kwire.") and fk.count(".") == 1 and isinstance(fv, list):
                        body = struct(fv)
                    elif fk.startswith("kwire.") and fk.count(".") == 1 and fv == "" and fk != "kwire.error_code":
                        body = {}
                out.append({"frame": int(frame["frame.number"]), "time": epoch_seconds(frame["frame.time_epoch"]),
                            "generic": g, "header": header, "body": body, "expert": expert_messages(pdu)})
    return out
