#!/usr/bin/env python3
# Each partition's end offset when a capture ends, from `kwire decode -T json --api
# Produce,Fetch,Metadata,DeleteTopics` of it on stdin (a topic the capture deletes has
# none): the largest of the high watermarks its Fetch
# answers gave and of the offsets after each batch a Produce answer acknowledged (the
# batch's base offset plus its lastOffsetDelta + 1). Topics named by id are named by
# the capture's Metadata answers. Prints "TOPIC PARTITION END" lines; a topic whose name
# the capture never gives is printed as ?TOPIC_ID.
import collections, json, sys
names = {}                    # topic id (base64) -> name, from Metadata answers
pending = {}                  # (conversation, correlation id) -> produce request body
ends = collections.defaultdict(int)
def conv(o): return tuple(sorted((o["src"], o["dst"])))
def topic(t):
    if t.get("name") or t.get("topic"): return t.get("name") or t.get("topic")
    return ("id", t.get("topicId"))
rows = [json.loads(l) for l in sys.stdin]
for o in rows:
    if o["apiName"] == "Metadata" and o["direction"] == "response":
        for t in o["body"].get("topics", []):
            if t.get("topicId") and t.get("name"): names[t["topicId"]] = t["name"]
def name(k): return names.get(k[1], k) if isinstance(k, tuple) else k
for o in rows:
    b, api, d = o["body"], o["apiName"], o["direction"]
    if api == "Produce" and d == "request":
        pending[(conv(o), o["correlationId"])] = b
    elif api == "Produce" and d == "response":
        req = pending.pop((conv(o), o["correlationId"]), None)
        if not req: continue
        counts = {}
        for t in req["topicData"]:
            for p in t["partitionData"]:
                counts[(name(topic(t)), p["index"])] = sum(x.get("lastOffsetDelta", 0) + 1 for x in (p.get("records") or []))
        for t in b["responses"]:
            for p in t["partitionResponses"]:
                k = (name(topic(t)), p["index"])
                if p["errorCode"] == 0 and p["baseOffset"] >= 0 and k in counts:
                    ends[k] = max(ends[k], p["baseOffset"] + counts[k])
    elif api == "Fetch" and d == "response":
        for t in b.get("responses", []):
            for p in t["partitions"]:
                if p["errorCode"] == 0: ends[(name(topic(t)), p["partitionIndex"])] = max(ends[(name(topic(t)), p["partitionIndex"])], p["highWatermark"])
deleted = set()
for o in rows:
    if o["apiName"] == "DeleteTopics" and o["direction"] == "request":
        deleted.update(o["body"].get("topicNames") or [])
        deleted.update(t.get("name") for t in o["body"].get("topics") or [] if t.get("name"))
for (t, p), e in sorted(ends.items(), key=str):
    if t in deleted: continue
    print(t if isinstance(t, str) else "?" + t[1], p, e)
