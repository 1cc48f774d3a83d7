"""The field names the Wireshark dissectors must register, computed straight
from the spec JSON files (not from kwire's compiler): every field path of
every message version kwire decodes, plus the documented generic fields."""
import glob
import json
import os
import re


def snake(name):
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def versions(s, hi=1000):
    s = (s or "none").strip()
    if s == "none":
        return set()
    if s.endswith("+"):
        return set(range(int(s[:-1]), hi))
    if "-" in s:
        lo, h = s.split("-")
        return set(range(int(lo), int(h) + 1))
    return {int(s)}


def load(d):
    out = {}
    for f in sorted(glob.glob(os.path.join(d, "*.json"))):
        with open(f) as fh:
            spec = json.load(fh)
        if spec.get("type") in ("request", "response", "header"):
            out[spec["name"]] = spec
    return out


def walk(spec, fields, prefix, vs, out):
    common = {c["name"]: c for c in spec.get("commonStructs", [])}
    for f in fields:
        fv = versions(f.get("versions")) & vs
        if not fv:
            continue
        abbrev = prefix + "." + snake(f["name"])
        out.add(abbrev)
        t = f["type"][2:] if f["type"].startswith("[]") else f["type"]
        if "fields" in f:
            walk(spec, f["fields"], abbrev, fv, out)
        elif t in common:
            walk(spec, common[t]["fields"], abbrev, fv, out)


# Bytes fields that carry a version-prefixed data struct, as Kafka's clients
# write them (ConsumerProtocol for classic consumer groups, which the group
# coordinator hands back in DescribeGroups; the principal an Envelope
# forwards): message, path of the bytes field, data spec.
PAYLOADS = [
    ("JoinGroupRequest", "protocols.metadata", "ConsumerProtocolSubscription"),
    ("JoinGroupResponse", "members.metadata", "ConsumerProtocolSubscription"),
    ("SyncGroupRequest", "assignments.assignment", "ConsumerProtocolAssignment"),
    ("SyncGroupResponse", "assignment", "ConsumerProtocolAssignment"),
    ("DescribeGroupsResponse", "groups.members.member_metadata", "ConsumerProtocolSubscription"),
    ("DescribeGroupsResponse", "groups.members.member_assignment", "ConsumerProtocolAssignment"),
    ("EnvelopeRequest", "request_principal", "DefaultPrincipalData"),
]


def payload_paths(source):
    """The fields of the data structs inside bytes fields, named below the
    bytes field: the version prefix, every field of every version, and the
    bytes after the struct."""
    out = set()
    for message, path, data in PAYLOADS:
        with open(os.path.join(source, "specs/kafka", data + ".json")) as fh:
            spec = json.load(fh)
        base = "kwire." + snake(message) + "." + path
        out |= {base + ".version", base + ".trailing_bytes"}
        walk(spec, spec["fields"], base, versions(spec.get("validVersions")), out)
    return out


def spec_paths(source):
    new = load(os.path.join(source, "specs/kafka"))
    older = load(os.path.join(source, "specs/kafka-older"))
    out = set()
    taken = []
    for spec in new.values():
        taken.append((spec, versions(spec.get("validVersions"))))
    by_key = {(s.get("apiKey"), s["type"]): s for s in new.values()}
    for spec in older.values():
        if spec["type"] == "header":
            continue
        vs = versions(spec.get("validVersions"))
        if spec.get("latestVersionUnstable") and vs:
            vs.discard(max(vs))   # early-access versions whose layout later changed
        newer = by_key.get((spec.get("apiKey"), spec["type"]))
        if newer:
            vs -= versions(newer.get("validVersions"))
        taken.append((spec, vs))
    for d in sorted(glob.glob(os.path.join(source, "specs/overlays/*/"))):
        for spec in load(d).values():
            taken.append((spec, versions(spec.get("validVersions"))))
    for spec, vs in taken:
        if not vs:
            continue
        root = "kwire." + snake(spec["name"])
        out.add(root)
        walk(spec, spec["fields"], root, vs, out)
    return out | payload_paths(source)


# The generic fields and the record fields (RecordBatch v2, Record, record
# Header and legacy Message, as PROTOCOL-NOTES.md lists them).
GENERIC_FIELDS = {
    "kwire.length", "kwire.api_key", "kwire.api_version", "kwire.correlation_id", "kwire.direction",
    "kwire.api_name", "kwire.error_code", "kwire.request_in", "kwire.response_in", "kwire.time", "kwire.null",
    "kwire.redacted", "kwire.unknown_tagged_field", "kwire.unknown_tagged_field.tag", "kwire.overlay",
    "kwire.overlay_field", "kwire.not_kafka", "kwire.partial_batch",
    "kwire.record_batch", "kwire.record", "kwire.record_header", "kwire.legacy_message",
} | {"kwire.record_batch." + f for f in (
    "base_offset", "batch_length", "partition_leader_epoch", "magic", "crc", "attributes", "last_offset_delta",
    "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "record_count")} | {
    "kwire.record." + f for f in ("length", "attributes", "timestamp_delta", "offset_delta", "key", "value")} | {
    "kwire.record_header.key", "kwire.record_header.value"} | {"kwire.legacy_message." + f for f in (
        "offset", "message_size", "crc", "magic", "attributes", "timestamp", "key", "value")}

# Expert infos are registered as fields too.
EXPERT_FIELDS = {"kwire.malformed", "kwire.error", "kwire.unmatched", "kwire.not_kafka.expert",
                 "kwire.overlay.expert"}


def error_names(source):
    """Kafka's error code -> name, from specs/kafka/errors.tsv (Kafka's
    Errors enum as shipped with the specs)."""
    out = {}
    with open(os.path.join(source, "specs", "kafka", "errors.tsv")) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 2 and re.fullmatch(r"-?\d+", parts[0]):
                out[int(parts[0])] = parts[1]
    return out
