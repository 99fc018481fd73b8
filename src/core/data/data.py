import base64, hashlib, json, os, signal, stat, sys, time

# CFG_B64 is the line the client puts first (core/data/operation.ts)
CFG = json.loads(base64.b64decode(globals()["CFG_B64"]).decode("utf-8"))
NONCE = CFG["nonce"]
T0 = time.time()
DEADLINE = T0 + float(CFG.get("budgetS", 60))
# A hard stop of its own a little past the budget (the loops check DEADLINE between files): never an orphan.
signal.alarm(int(float(CFG.get("budgetS", 60))) + 8)
SAMPLE = int(CFG.get("sample", 1000))
SPREAD = bool(CFG.get("spread", True))
COUNT = bool(CFG.get("count", True))
MAX_LINE = int(CFG.get("maxLineBytes", 8 << 20))
TAIL_CAP = int(CFG.get("tailCapBytes", 64 << 20))
SPREAD_CAP = int(CFG.get("spreadCapBytes", 256 << 20))
COUNT_BUDGET = float(CFG.get("countBudgetS", 8))
# rows kept whole for Open Sample (the first judged rows of the sample: spread over the file)
SAMPLE_ROWS = 15
RESP_PTR = CFG.get("responseField")
PROMPT_PTR = CFG.get("promptField")
REP_WORDS = 2000
PRUNE = set(CFG.get("prune") or [])
GONE = "no such file (deleted, or never there)"
OUT_DIRS = set(["completions", "outputs", "output", "generations", "generated", "results", "responses", "samples"])


def emit(tag, obj):
    sys.stdout.write("@@%s-%s@@ %s\n" % (NONCE, tag, json.dumps(obj, ensure_ascii=True, sort_keys=True)))
    sys.stdout.flush()


def ptr_get(o, p):
    if p == "":
        return o
    if not p.startswith("/"):
        return None
    for tok in p[1:].split("/"):
        tok = tok.replace("~1", "/").replace("~0", "~")
        if isinstance(o, list):
            if not tok.isdigit() or int(tok) >= len(o):
                return None
            o = o[int(tok)]
        elif isinstance(o, dict):
            if tok not in o:
                return None
            o = o[tok]
        else:
            return None
    return o


def as_text(v):
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, list):
        parts = []
        for x in v:
            if isinstance(x, str):
                parts.append(x)
            elif isinstance(x, dict) and isinstance(x.get("text"), str):
                parts.append(x["text"])
        return "".join(parts)
    if isinstance(v, (int, float, bool)):
        return str(v)
    return json.dumps(v)


def as_int(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v == v:
        return int(v)
    return None


def finish_of(v):
    if isinstance(v, dict):
        v = v.get("type")
    return v if isinstance(v, str) else None


def first_str(o, keys):
    for k in keys:
        v = o.get(k)
        if isinstance(v, str):
            return v
    return None


def last_turn(msgs, roles, text_key):
    for m in reversed(msgs):
        if isinstance(m, dict) and (m.get("role") in roles or m.get("from") in roles):
            return m
    return None


def extract(o):
    """(format, response text or None, reasoning text, finish reason, completion tokens, prompt)"""
    if not isinstance(o, dict):
        return ("not-an-object", None, None, None, None, None)
    src = o
    r = o.get("response")
    if isinstance(r, dict) and isinstance(r.get("body"), dict):
        src = r["body"]
    elif isinstance(r, dict) and isinstance(r.get("choices"), list):
        src = r
    fmt, resp, reas, fin, toks, prompt = "unknown", None, None, None, None, None
    ch = src.get("choices")
    usage = src.get("usage") if isinstance(src.get("usage"), dict) else {}
    meta = o.get("meta_info")
    msgs = o.get("messages") if isinstance(o.get("messages"), list) else None
    conv = o.get("conversations") if isinstance(o.get("conversations"), list) else None
    if isinstance(ch, list) and ch and isinstance(ch[0], dict):
        c = ch[0]
        fin = finish_of(c.get("finish_reason"))
        toks = as_int(usage.get("completion_tokens"))
        if isinstance(c.get("message"), dict):
            m = c["message"]
            fmt, resp = "openai-chat", as_text(m.get("content")) or ""
            reas = as_text(m.get("reasoning_content")) or as_text(m.get("reasoning"))
        elif "text" in c:
            fmt, resp = "openai-text", as_text(c.get("text")) or ""
    elif isinstance(meta, dict) and "text" in o:
        fmt, resp = "sglang-generate", as_text(o.get("text")) or ""
        fin = finish_of(meta.get("finish_reason"))
        toks = as_int(meta.get("completion_tokens"))
    elif msgs is not None or conv is not None:
        turns = msgs if msgs is not None else conv
        a = last_turn(turns, ("assistant", "gpt"), "content")
        if a is not None:
            fmt = "chat-messages"
            resp = as_text(a.get("content") if "content" in a else a.get("value")) or ""
            reas = as_text(a.get("reasoning_content")) or as_text(a.get("reasoning")) or as_text(a.get("thinking"))
        fin = finish_of(o.get("finish_reason"))
        u = last_turn(turns, ("user", "human"), "content")
        if u is not None:
            prompt = as_text(u.get("content") if "content" in u else u.get("value"))
    if fmt == "unknown" and ch is None and msgs is None and conv is None:
        for k in ("response", "output", "completion", "answer", "text", "generated_text", "generation"):
            v = o.get(k)
            if isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, (str, dict)) for x in v)):
                fmt, resp = "flat", as_text(v) or ""
                break
        if fmt == "flat":
            reas = first_str(o, ("reasoning_content", "reasoning", "thinking", "think"))
            fin = finish_of(o.get("finish_reason") if "finish_reason" in o else o.get("stop_reason"))
            for k in ("completion_tokens", "output_tokens", "num_output_tokens", "generated_tokens"):
                if as_int(o.get(k)) is not None:
                    toks = as_int(o.get(k))
                    break
            if toks is None and isinstance(o.get("usage"), dict):
                toks = as_int(o["usage"].get("completion_tokens"))
    if RESP_PTR is not None:
        v = ptr_get(o, RESP_PTR)
        fmt, resp = "pointer", (as_text(v) if v is not None else None)
    if PROMPT_PTR is not None:
        prompt = as_text(ptr_get(o, PROMPT_PTR))
    elif prompt is None:
        prompt = first_str(o, ("prompt", "question", "input", "instruction", "query"))
    return (fmt, resp, reas, fin, toks, prompt)


def split_think(s):
    """(answer, thinking present) - the <think>...</think> blocks removed, the rest trimmed. Linear in len(s):
    str.find from left to right, never a backtracking regex (a row of 40,000 "<think>" took minutes)."""
    thought = False
    if "<think>" in s or "</think>" in s:
        out = []
        pos = 0
        while True:
            i = s.find("<think>", pos)
            if i < 0:
                break
            j = s.find("</think>", i + 7)
            if j < 0:
                break
            if s[i + 7:j].strip():
                thought = True
            out.append(s[pos:i])
            pos = j + 8
        out.append(s[pos:])
        s = "".join(out)
        i = s.find("</think>")
        if i >= 0:  # the chat template opened the block: everything before its end is thinking
            if s[:i].strip():
                thought = True
            s = s[i + 8:]
        i = s.find("<think>")
        if i >= 0:  # never closed: the rest is thinking (cut off while thinking)
            if s[i + 7:].strip():
                thought = True
            s = s[:i]
    return s.strip(), thought


def repetitive(ans):
    words = ans.split()
    if len(words) > REP_WORDS:
        words = words[-REP_WORDS:]
    n = len(words)
    if n < 20:
        return False
    seen = {}
    for i in range(n - 9):
        k = tuple(words[i:i + 10])
        seen[k] = seen.get(k, 0) + 1
    covered = bytearray(n)
    for i in range(n - 9):
        if seen[tuple(words[i:i + 10])] > 1:
            covered[i:i + 10] = b"\x01" * 10
    return covered.count(1) >= 0.3 * n


def pct(xs):
    if not xs:
        return None
    xs.sort()
    def at(q):
        return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]
    return {"p10": at(0.10), "p50": at(0.50), "p90": at(0.90), "max": xs[-1]}


def count_rows(f, size):
    """(rows, exact): newlines counted in 8 MiB blocks; past the budget, the rest estimated from the bytes per row."""
    f.seek(0)
    n, pos, t = 0, 0, time.time()
    while True:
        b = f.read(8 << 20)
        if not b:
            break
        n += b.count(b"\n")
        pos += len(b)
        if time.time() - t > COUNT_BUDGET or time.time() > DEADLINE:
            if pos < size and n > 0:
                return int(round(n + (size - pos) * (float(n) / pos))), False
            break
    return n, True


def tail_lines(f, size, want):
    """The last complete lines (at most want), the offset where they start, and whether a partial last line was left out."""
    end = size
    buf = b""
    pos = end
    while pos > 0 and buf.count(b"\n") <= want and end - pos < TAIL_CAP:
        step = min(1 << 20, pos)
        pos -= step
        f.seek(pos)
        chunk = f.read(step)
        buf = chunk + buf
    lines = buf.split(b"\n")
    partial = None
    if lines and lines[-1] != b"":
        partial = lines[-1]
    lines = lines[:-1]
    start = pos
    if pos > 0 and lines:  # the first piece may be the end of a longer line
        start = pos + len(lines[0]) + 1
        lines = lines[1:]
    if len(lines) > want:
        drop = lines[:len(lines) - want]
        start += sum(len(x) + 1 for x in drop)
        lines = lines[len(lines) - want:]
    return lines, start, partial


def spread_lines(f, limit, want):
    out, read = [], 0
    if limit <= 0 or want <= 0:
        return out, False
    seen = set()
    for k in range(want):
        if time.time() > DEADLINE or read > SPREAD_CAP:
            return out, True
        off = (k * limit) // want
        f.seek(off)
        if off > 0:
            skip = f.readline(MAX_LINE)
            read += len(skip)
            if not skip.endswith(b"\n"):
                continue
            off += len(skip)
        if off >= limit or off in seen:
            continue
        seen.add(off)
        line = f.readline(MAX_LINE)
        read += len(line)
        if not line:
            continue
        if not line.endswith(b"\n"):
            out.append(None)  # longer than the line bound
            continue
        out.append(line[:-1])
    return out, False


def judge(path):
    r = {"path": path, "error": None}
    t = time.time()
    try:
        st = os.stat(path)
    except OSError as e:
        r["error"] = GONE if e.errno == 2 else "cannot read it: %s" % (e.strerror or e)
        return r
    if stat.S_ISDIR(st.st_mode):
        r["error"] = "a folder, not a file"
        return r
    if not stat.S_ISREG(st.st_mode):
        r["error"] = "not a regular file (a pipe, socket or device): not read"
        return r
    r["size"] = st.st_size
    r["mtime"] = st.st_mtime
    if path.endswith((".gz", ".zst", ".bz2", ".xz")):
        r["error"] = "compressed: not read (it would mean decompressing the whole file)"
        return r
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        r["error"] = GONE if e.errno == 2 else "cannot read it: %s" % (e.strerror or e)
        return r
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        size = st.st_size
        r["size"] = size
        head = f.read(65536)
        if b"\0" in head:
            r["error"] = "binary: NUL bytes in its first 64 KiB (not JSONL)"
            return r
        if size == 0:
            r.update({"rows": 0, "rowsExact": True, "sampled": 0, "parsed": 0, "parseErrors": 0})
            return r
        lines, start, partial = tail_lines(f, size, SAMPLE)
        spread, cut = spread_lines(f, start, SAMPLE) if SPREAD else ([], False)
        if COUNT:
            rows, exact = count_rows(f, size)
        else:
            mean = (size - start) / float(max(1, len(lines)))
            rows, exact = int(round(size / mean)) if mean > 0 else 0, False
        try:
            gone = os.fstat(f.fileno()).st_nlink == 0
        except OSError:
            gone = False
    r["rows"], r["rowsExact"] = rows, exact
    if gone:
        r["deleted"] = True
    r["spreadCut"] = cut
    judge_lines(r, spread + lines, partial)
    if partial is not None and not r.get("partialLastLine") and exact:
        r["rows"] = rows + 1  # a complete last row that only lacks its newline
    r["elapsedMs"] = int((time.time() - t) * 1000)
    return r


def judge_lines(r, lines, partial):
    sampled = parsed = errors = too_long = no_resp = 0
    empty = thinking = trunc = rep = 0
    fmts = {}
    tops = {}
    alen, toks = [], []
    examples = {"empty": [], "top": [], "repetitive": [], "rows": []}
    err_example = None
    if partial is not None:
        try:
            json.loads(partial.decode("utf-8"))
            lines = lines + [partial]  # a complete row that only lacks its newline
        except ValueError:
            r["partialLastLine"] = True
    for raw in lines:
        if raw is None:
            sampled += 1
            too_long += 1
            errors += 1
            continue
        if not raw.strip():
            continue
        sampled += 1
        try:
            o = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            errors += 1
            if err_example is None:
                err_example = str(e)[:120]
            continue
        fmt, resp, reas, fin, tk, prompt = extract(o)
        if fmt == "not-an-object":
            errors += 1
            if err_example is None:
                err_example = "a JSON %s, not an object" % type(o).__name__
            continue
        parsed += 1
        if resp is None:
            no_resp += 1
            continue
        fmts[fmt] = fmts.get(fmt, 0) + 1
        ans, thought = split_think(resp)
        if reas and reas.strip():
            thought = True
        alen.append(len(ans))
        if tk is not None:
            toks.append(tk)
        if fin == "length":
            trunc += 1
        ex = {"prompt": (prompt or "")[:200], "answer": ans[:200]}
        if len(examples["rows"]) < SAMPLE_ROWS:
            examples["rows"].append(ex)
        if not ans:
            empty += 1
            if thought:
                thinking += 1
            if len(examples["empty"]) < 3:
                examples["empty"].append(ex)
            continue
        key = ans if len(ans) <= 256 else hashlib.sha1(ans.encode("utf-8", "surrogatepass")).hexdigest()
        e = tops.get(key)
        if e is None:
            tops[key] = [1, ans[:200], ex]
        else:
            e[0] += 1
        if repetitive(ans):
            rep += 1
            if len(examples["repetitive"]) < 3:
                examples["repetitive"].append(ex)
    judged = parsed - no_resp
    top = None
    if tops:
        k = max(tops, key=lambda x: tops[x][0])
        top = {"text": tops[k][1], "count": tops[k][0]}
        examples["top"] = [tops[k][2]]
    fmt = max(fmts, key=lambda x: fmts[x]) if fmts else "unknown"
    r.update({
        "sampled": sampled, "parsed": parsed, "parseErrors": errors, "tooLong": too_long, "noResponse": no_resp,
        "judged": judged, "format": fmt, "formats": fmts,
        "counts": {"empty": empty, "thinkingOnly": thinking, "truncated": trunc, "repetitive": rep},
        "top": top, "answerLength": pct(alen), "completionTokens": pct(toks), "examples": examples,
        "parseErrorExample": err_example,
    })


def expand(p):
    if p == "~" or p.startswith("~/"):
        return os.path.expanduser("~") + p[1:]
    return p


def under_any(p, dirs):
    for d in dirs:
        d = d.rstrip("/") or "/"
        if p == d or p.startswith(d if d == "/" else d + "/"):
            return True
    return False


def jsonl_in(d, out, why):
    try:
        names = os.listdir(d)
    except OSError:
        return
    for n in names:
        if n.endswith(".jsonl") and not n.startswith("."):
            p = os.path.join(d, n)
            if os.path.isfile(p) and p not in out:
                out[p] = why


def progress_targets(pf, out):
    try:
        with open(pf, "rb") as f:
            o = json.loads(f.read(1 << 20).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return
    vals = []
    def walk(v, depth):
        if depth > 2:
            return
        if isinstance(v, str):
            vals.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x, depth + 1)
        elif isinstance(v, list):
            for x in v[:64]:
                walk(x, depth + 1)
    walk(o, 0)
    base = os.path.dirname(pf)
    for v in vals:
        if "://" in v or len(v) > 4096 or "\n" in v:
            continue
        p = os.path.normpath(os.path.join(base, expand(v)))
        if v.endswith(".jsonl") and os.path.isfile(p):
            out.setdefault(p, "named in " + pf)
        elif ("/" in v or v in OUT_DIRS) and os.path.isdir(p):
            jsonl_in(p, out, "in the folder " + pf + " names")


def discover():
    found = {}
    roots = [expand(x) for x in CFG.get("roots") or []]
    scope = os.environ.get("GPU_SESSIONS_SIM_HOME")
    # 1. JSONL files a process has open (the generation client keeps its output open)
    try:
        pids = [x for x in os.listdir("/proc") if x.isdigit()]
    except OSError:
        pids = []
    for pid in pids:
        d = "/proc/%s/fd" % pid
        try:
            fds = os.listdir(d)
        except OSError:
            continue
        for fd in fds:
            try:
                t = os.readlink(d + "/" + fd)
            except OSError:
                continue
            if t.endswith(".jsonl") and t.startswith("/") and (not scope or under_any(t, [scope])):
                if os.path.isfile(t):
                    found.setdefault(t, "open by process %s" % pid)
    # 2. progress.json files and completions/-style folders under the roots
    maxd = int(CFG.get("maxDepth", 4))
    dirs_left = int(CFG.get("maxDirs", 20000))
    for root in roots:
        root = root.rstrip("/") or "/"
        if not os.path.isdir(root):
            continue
        base = root.count("/")
        for dp, dns, fns in os.walk(root):
            dirs_left -= 1
            if dirs_left < 0 or time.time() > DEADLINE - 5:
                break
            depth = dp.count("/") - base
            dns[:] = [x for x in dns if not x.startswith(".") and x not in PRUNE] if depth < maxd else []
            for n in fns:
                if n == "progress.json" or (n.endswith(".json") and "progress" in n):
                    progress_targets(os.path.join(dp, n), found)
            if os.path.basename(dp) in OUT_DIRS:
                jsonl_in(dp, found, "in a " + os.path.basename(dp) + "/ folder")
    # Only this user's work (as the probe's [ -O ] || [ -w ]): a co-tenant's outputs in a shared volume are not
    # judged and alerted as ours. Named paths are judged whoever owns them.
    me = os.getuid()
    def mine(p):
        try:
            return os.stat(p).st_uid == me or os.access(p, os.W_OK)
        except OSError:
            return False
    return dict((p, why) for p, why in found.items() if mine(p))


def main():
    paths = CFG.get("paths")
    if paths:
        todo = []
        for p in paths:
            if expand(p) in todo:
                continue
            p = expand(p)
            if os.path.isdir(p):
                got = {}
                jsonl_in(p, got, "")
                if not got:
                    emit("F", {"path": p, "error": "a folder with no .jsonl file in it"})
                todo.extend(x for x in sorted(got) if x not in todo)
            else:
                todo.append(p)
        explicit = True
    else:
        found = discover()
        def mt(p):
            try:
                return os.stat(p).st_mtime
            except OSError:
                return 0
        todo = sorted(found, key=lambda p: (-mt(p), p))
        limit = int(CFG.get("maxFiles", 24))
        for p in todo[limit:]:
            emit("S", {"path": p, "why": "more than %d output files: only the %d newest were judged" % (limit, limit)})
        todo = todo[:limit]
        explicit = False
    for p in todo:
        if time.time() > DEADLINE:
            emit("F", {"path": p, "error": "not judged: the time budget ran out (judge it alone, with PATH)"})
            continue
        try:
            r = judge(p)
        except MemoryError:
            r = {"path": p, "error": "not judged: out of memory reading its sample (lines too long?)"}
        except Exception as e:  # one odd file never stops the others
            r = {"path": p, "error": "not judged: %s: %s" % (type(e).__name__, str(e)[:200])}
        r["discovered"] = not explicit
        if not explicit:
            r["why"] = found.get(p)
        emit("F", r)


main()
try:
    import resource
    RSS = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
except Exception:  # not on every platform
    RSS = None
emit("E", {"elapsedMs": int((time.time() - T0) * 1000), "peakRssKiB": RSS})
