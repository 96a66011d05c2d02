"""Render the resolved model into Cython decoder modules (``decoders/accel/*.pyx``).

The same model as ``render`` (the pure-Python decoders), compiled: each struct at each version
becomes a ``cdef`` function reading the frame through a C pointer with typed positions and
lengths. They check every read against the bytes present and fail as the plain readers fail: the
same DecodeError (status, field path, offset; ``render_cy_read``), so a frame is decoded once. An embedded
structure's readers also have quiet entries (``QUIET_VERSIONS``: ``None`` on failure, its status noted), for a
caller that only wants the status (``decoders.embedded``).
Both must give the same result, or the same failure, on every frame (``tests/decoders/test_accel.py``).

For the APIs in :data:`TEXT_APIS` each struct at each version also becomes a JSON writer (``_t``
functions, ``REQUEST_TEXT``/``RESPONSE_TEXT`` entries): the same reads and checks, writing the body's
text as it goes instead of building dicts (``tests/decoders/test_text.py``).

The readers are ``render_cy_read``'s, the JSON writers ``render_cy_text``'s, what both share
``render_cy_base``'s; this module puts a module's text together.
"""

from __future__ import annotations

from typing import Any

from decoders.codegen.render_cy_read import CyReaders
from decoders.codegen.render_cy_text import TEXT_APIS as TEXT_APIS
from decoders.codegen.render_cy_text import CyTextWriters
from decoders.codegen.shared import HEADER, module_name, versioned_table

DIRECTIVES = ("# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, "
              "cdivision=True, infer_types=False")


class CyModuleBuilder(CyReaders, CyTextWriters):
    """One compiled module: its readers (``render_cy_read``), JSON writers (``render_cy_text``) and its text."""

    def render(self, entries: list[str], tail: list[str], quiet: dict[str, str] | None = None) -> str:
        """The module's text; ``quiet``: the entries (cdef name -> def name) that return None on failure."""
        out = [HEADER.rstrip("\n"), DIRECTIVES, "from decoders.accel._cy cimport *",
               "from decoders.accel._where cimport *", "from decoders.accel._utf8 cimport utf8_text", "",
               "from decoders.element_budget cimport ElementBudget", "",
               "from decoders import _runtime as _rt", "from decoders.accel._where import FAILED as _FAILED", "",
               "# What a reader returns when it failed, its failure noted (decoders/accel/_where.pyx).",
               "cdef object FAILED = _FAILED", ""]
        if self.text_functions:
            budget = out.index("from decoders.element_budget cimport ElementBudget")
            out[budget] = "from decoders.element_budget cimport ElementBudget, record_set_elements"
            out[budget - 1:budget - 1] = [
                "from cpython.unicode cimport PyUnicode_DecodeASCII, PyUnicode_GET_LENGTH",
                "from libc.string cimport memcmp",
                "cdef extern from \"Python.h\":",
                "    void* PyUnicode_DATA(object o)",
                "from decoders.accel._text cimport *"]
            out += [
                "try:",
                "    from decoders.native._records import HEADERS_WRITER as _HEADERS_WRITER",
                "except ImportError:  # the records twin is not built: record sets are left to the dict path",
                "    _HEADERS_WRITER = None",
                "",
                "# The JSON text being written (one message at a time), and the non-zero ErrorCode values in it.",
                "cdef JOut _out",
                "_out.data = NULL",
                "_out.size = _out.cap = 0",
                "_out.headers = headers_writer(_HEADERS_WRITER)",
                "cdef list _codes = None",
                "",
                "",
                "cdef int _code(long long v) except -1:",
                "    global _codes",
                "    if _codes is None:",
                "        _codes = []",
                "    _codes.append(v)",
                "    return 0",
                "",
                "",
                "# The topics the text names, as decoders/topics.py gives them: None, a lone name (a str), or the list",
                "# of names and ids (1-tuples). A producer or consumer names the same topic message after message: the",
                "# last name is kept and given again while the bytes are the same.",
                "cdef object _topics = None",
                "cdef object _last_name = None",
                "",
                "",
                "cdef int _topic(object ref) except -1:",
                "    global _topics",
                "    if _topics is None:",
                "        _topics = ref if type(ref) is str else [ref]",
                "    elif type(_topics) is list:",
                "        (<list>_topics).append(ref)",
                "    else:",
                "        _topics = [_topics, ref]",
                "    return 0",
                "",
                "",
                "cdef int _tname(const unsigned char* s, Py_ssize_t n) except -1:",
                "    \"\"\"A topic's name, ``s[:n]`` (ASCII: jstr wrote it).\"\"\"",
                "    global _last_name",
                "    cdef object name = _last_name",
                "    if name is None or PyUnicode_GET_LENGTH(name) != n or memcmp(PyUnicode_DATA(name), s, n) != 0:",
                "        name = _last_name = PyUnicode_DecodeASCII(<const char*>s, n, NULL)",
                "    return _topic(name)",
                "",
                "",
                "cdef int _tid(const unsigned char* u) except -1:",
                "    \"\"\"A topic's id, the 16 bytes at ``u`` (juuid has just written it); the zero id is none.\"\"\"",
                "    cdef int i",
                "    for i in range(16):",
                "        if u[i]:",
                "            break",
                "    else:",
                "        return 0",
                "    return _topic((PyUnicode_DecodeASCII(_out.data + _out.size - 23, 22, NULL),))",
                "",
            ]
        for name, body in self.ordered:
            out.append("")
            # A reader (_f) is given its caller's field, which a failure names (decoders/accel/_where.pyx).
            where = ", Where* up" if name.startswith("_f") else ""
            out.append(f"cdef object {name}(bytes b, const unsigned char* c, Py_ssize_t L, Py_ssize_t* pp, "
                       f"ElementBudget B{where}):")
            out.append(body)
        for cname in entries:
            self.wrapper(cname)
        # An entry point (a message, header or embedded structure), or a tagged field's reader called back by
        # _rt.tags: each spends the budget it is given (the message's) and raises its failure; a quiet one returns
        # None instead, the failure's status given by _where.last_failure().
        entry_points = [(wname, cname, "raise_failure()") for cname, wname in self.wrappers.items()]
        entry_points += [(qname, cname, "return None") for cname, qname in (quiet or {}).items()]
        for name, cname, on_failure in entry_points:
            out.append("")
            out.append(f"def {name}(bytes b, Py_ssize_t p, ElementBudget B not None):")
            out.append(f"    v = {cname}(b, b, len(b), &p, B, NULL)")
            out.append("    if v is FAILED:")
            out.append(f"        {on_failure}")
            out.append("    return v, p")
        for cname, xname in self.text_entries.items():
            out.append("")
            out.append(f"def {xname}(bytes b, Py_ssize_t p, ElementBudget B not None):")
            out.append("    global _codes, _topics")
            out.append("    _out.size = 0")
            out.append("    _codes = _topics = None")
            out.append("    try:")
            out.append(f"        d = {cname}(b, b, len(b), &p, B)")
            out.append("    except Exception:")
            out.append("        return None  # left to the dict path, which says why")
            out.append("    if p != len(b):")
            out.append("        return None")
            out.append("    return PyBytes_FromStringAndSize(_out.data, _out.size), _codes, d, _topics")
        out.append("")
        for text, name in self.tables.items():
            out.append(f"{name} = {text}")
        out.append("")
        out.extend(tail)
        return "\n".join(out) + "\n"


def _dict_text(builder: CyModuleBuilder, table: dict[int, str]) -> str:
    return "{" + ", ".join(f"{k}: {builder.wrapper(v)}" for k, v in sorted(table.items())) + "}"


def render_api_cy(doc: dict[str, Any]) -> str:
    builder = CyModuleBuilder()
    request = versioned_table(builder, doc["request"], doc["name"] + "Request")
    response = versioned_table(builder, doc["response"], doc["name"] + "Response")
    entries = sorted(set(request.values()) | set(response.values()), key=lambda n: int(n[2:]))
    tail = [f"REQUEST = {_dict_text(builder, request)}", f"RESPONSE = {_dict_text(builder, response)}"]
    if doc["apiKey"] in TEXT_APIS:
        texts = {kind: builder.text_table(doc[kind], doc["name"] + kind.capitalize())
                 for kind in ("request", "response")}
        tail += [f"{kind.upper()}_TEXT = {{" + ", ".join(f"{k}: {v}" for k, v in sorted(table.items())) + "}"
                 for kind, table in texts.items()]
    return builder.render(entries, tail)


def render_data_cy(doc: dict[str, Any], extra_versions: range | None = None) -> str:
    builder = CyModuleBuilder()
    variants = doc["variants"]
    if extra_versions is not None:
        variants = [{**variants[0], "versions": f"{extra_versions.start}-{extra_versions.stop - 1}"}]
    table = versioned_table(builder, variants, doc["name"])
    entries = sorted(set(table.values()), key=lambda n: int(n[2:]))
    quiet = {cname: f"_q{cname[2:]}" for cname in entries}
    quiet_table = "{" + ", ".join(f"{k}: {quiet[v]}" for k, v in sorted(table.items())) + "}"
    return builder.render(entries, [f"VERSIONS = {_dict_text(builder, table)}", f"QUIET_VERSIONS = {quiet_table}"],
                          quiet)


#: The APIs whose readers are compiled: what clients send and brokers answer on every connection (produce,
#: fetch, metadata, groups old and new, offsets, transactions, SASL, telemetry, Envelope). The admin,
#: controller and inter-broker APIs, rare on the wire, keep their plain generated readers: compiling them was
#: two thirds of the generated C (42 of 64 MB) and of the build's time, for none of the speed targets.
COMPILED_API_KEYS = frozenset((0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 17, 18, 22, 24, 25, 26, 28, 36, 58, 68, 71, 72,
                               76, 78, 79, 88))


def accel_files(apis: list[dict[str, Any]], data_docs: list[dict[str, Any]]) -> dict[str, str]:
    """File name -> text of every compiled decoder module (named as its plain readers would be,
    ``generate.plain_sources``): the APIs of :data:`COMPILED_API_KEYS` and every data structure (headers,
    embedded protocols)."""
    files: dict[str, str] = {}
    for doc in apis:
        if doc["apiKey"] not in COMPILED_API_KEYS:
            continue
        files[module_name(doc) + ".pyx"] = render_api_cy(doc)
    for doc in data_docs:
        extra = range(0, 3) if doc["name"] == "RequestHeader" else None
        files[module_name(doc) + ".pyx"] = render_data_cy(doc, extra)
    return files
