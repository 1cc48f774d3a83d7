"""Field-by-field comparison of a message as tshark shows it (ws_tree) with
the same message as `kwire decode -T json` prints it."""
import base64
import binascii
import math
from decimal import Decimal

from ws_tree import Empty, Payload, norm


def bytes_of_hex(s):
    try:
        return bytes.fromhex(s.replace(":", ""))
    except ValueError:
        return None


def bytes_of_base64(s):
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return None


class Comparison:
    def __init__(self):
        self.fields = 0
        self.mismatches = []
        self.nested_payloads = 0   # payloads decoded inside bytes fields, compared field by field

    def bad(self, path, kw, ts):
        if len(self.mismatches) < 50:
            self.mismatches.append(f"{path}: kwire decode {kw!r} != tshark {ts!r}")
        else:
            self.mismatches.append("...")

    def value(self, path, kw, ts):
        self.fields += 1
        if isinstance(ts, Empty):
            if kw not in ("", {}, []):
                self.bad(path, kw, "<empty>")
            return
        if kw is None or ts is None:
            if kw is not ts:
                self.bad(path, kw, ts)
            return
        if isinstance(kw, dict):
            if not isinstance(ts, dict):
                return self.bad(path, kw, ts)
            if isinstance(ts, Payload):
                self.nested_payloads += 1
            kk = {norm(k): v for k, v in kw.items()}
            if set(kk) != set(ts):
                return self.bad(path + " keys", sorted(kk), sorted(ts))
            for k, v in kk.items():
                self.value(f"{path}.{k}", v, ts[k])
            return
        if isinstance(kw, list):
            if not isinstance(ts, list) or len(kw) != len(ts):
                return self.bad(path, kw, ts)
            for i, (a, b) in enumerate(zip(kw, ts)):
                self.value(f"{path}[{i}]", a, b)
            return
        if not isinstance(ts, str):
            return self.bad(path, kw, ts)
        if isinstance(kw, bool):
            if ts != ("1" if kw else "0"):
                self.bad(path, kw, ts)
            return
        if isinstance(kw, int):
            try:
                ok = int(ts, 0) == kw
            except ValueError:
                ok = False
            if not ok:
                self.bad(path, kw, ts)
            return
        if isinstance(kw, Decimal) or kw in ("NaN", "Infinity", "-Infinity"):
            try:
                a, b = float(kw), float(ts)
                ok = (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))
            except ValueError:
                ok = False
            if ok:
                return
        if kw == ts or kw.replace("\x00", "\u2400") == ts:  # Wireshark strings cannot hold NUL
            return
        raw = bytes_of_base64(kw)
        if raw is not None and bytes_of_hex(ts) == raw:
            return
        self.bad(path, kw, ts)

    def message(self, where, kw, ts):
        """kw: one decoded line of `kwire decode -T json`; ts: one ws_tree pdu."""
        g = ts["generic"]
        want = {
            "kwire.direction": "0" if kw["direction"] == "request" else "1",
            "kwire.correlation_id": str(kw["correlationId"]),
        }
        if kw.get("notKafka"):
            want["kwire.not_kafka"] = kw["notKafka"]
        elif kw["apiKey"] is not None:
            want["kwire.api_key"] = str(kw["apiKey"])
            want["kwire.api_version"] = str(kw["apiVersion"])
        if kw.get("apiName") and not kw.get("notKafka"):
            want["kwire.api_name"] = kw["apiName"]
        for k, v in want.items():
            self.fields += 1
            if g.get(k) != v:
                self.bad(f"{where} {k}", v, g.get(k))
        if abs(Decimal(kw["time"]) - Decimal(ts["time"])) >= Decimal("0.000001"):
            self.bad(f"{where} time", kw["time"], ts["time"])
        # kwire's frame is the packet that completed the message, as tshark numbers it.
        self.fields += 1
        if kw["frame"] != ts["frame"]:
            self.bad(f"{where} frame", kw["frame"], ts["frame"])
        experts = ts["expert"]
        self.fields += 1
        if bool(kw.get("unmatched")) != any(k == "kwire.unmatched" for k, _ in experts):
            self.bad(f"{where} unmatched", kw.get("unmatched"), experts)
        if "error" in kw:
            self.fields += 1
            if not any(k == "kwire.malformed" and kw["error"]["reason"] in m for k, m in experts):
                self.bad(f"{where} error", kw["error"], experts)
        elif any(k == "kwire.malformed" for k, _ in experts):
            self.bad(f"{where} error", None, experts)
        if kw.get("notKafka"):
            return
        self.value(f"{where} header", kw["header"], ts["header"])
        self.value(f"{where} body", kw["body"], ts["body"])
