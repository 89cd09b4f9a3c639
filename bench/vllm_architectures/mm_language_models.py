"""Generate bench/vllm_architectures/mm_language_models.json: for every multimodal and embedding
architecture of a vLLM release's model registry, the language model its vLLM class builds and the
encoder towers (vision / audio) it adds, read from the release wheel's source with ``ast`` (vLLM is
never imported).

    pip download vllm==0.33.0 --no-deps -d /tmp/w && unzip -q /tmp/w/vllm-*.whl 'vllm/*' -d /tmp/vsrc
    python bench/vllm_architectures/mm_language_models.py /tmp/vsrc 0.33.0

For each architecture the registry's ``(module, class)`` is resolved to its class definition and
the class and its bases (followed through the modules' imports) are read:

* language model: ``init_vllm_registered_model(..., architectures=["X"])`` gives X;
  ``init_vllm_registered_model(hf_config=...text_config)`` without ``architectures`` means the
  checkpoint's text config names it ("text_config"); an instantiated class that is, or derives
  from, a class ``_TEXT_GENERATION_MODELS`` registers gives that architecture (a ``...Model``
  backbone of a module that registers a causal LM gives that module's architecture); an
  ``self.model`` / ``self.language_model`` built from a class of the module itself that derives
  from none of those is an own decoder ("own").  An architecture whose registered class *is* a
  text-generation class (an embedding model served by a causal LM's class) is that architecture.
  An assignment (``self.x = ...`` or ``self.x: T = ...``, or ``self.x = local`` of a
  language model or tower attribute, the local assigned in the same ``__init__``) in a subclass replaces its bases' assignments to the same
  attribute.
* towers: the classes assigned to ``self.<attr>`` in ``__init__`` (following a helper function's
  returned classes one level), kept when the attribute or class name reads as a vision encoder
  (vision, visual, vit, image, vpm, siglip, clip, ...) or an audio encoder (audio, speech,
  whisper, apm, conformer, ...).

The table is read by bench/coverage.py to say what is missing for an architecture vmemplan does
not plan.  It is a reading of the source, not a run: "text_config" language models depend on the
checkpoint.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "bench" / "vllm_architectures" / "mm_language_models.json"
TABLES = ("_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS", "_EMBEDDING_MODELS")
VISION = re.compile(r"vision|visual|vit|image|img|vpm|siglip|clip|pixtral|radio|moonvit|"
                    r"idefics2|^sam_|navit|dinov|perception|eva2?clip", re.I)
AUDIO = re.compile(r"audio|speech|whisper|^apm|conformer|asr|sound|dasheng|wav2?|fbank|paraformer|"
                   r"sensevoice|firered|parakeet", re.I)
LM_ATTRS = {"language_model", "model", "llm", "text_model", "lm", "decoder", "thinker", "text", "transformer"}
TOWER_ATTRS = {"vision_model", "vision_tower", "visual", "vision", "vpm", "apm", "audio_tower", "audio_encoder",
               "audio_model", "sound_encoder", "whisper_encoder", "encoder", "vision_encoder", "vision_backbone",
               "vit", "vit_model", "sam_model"}
PROJECTOR = re.compile(r"project|adapter|merger|connector|pool|downsampl|newline|norm|abstractor|"
                       r"^(Parameter|Linear|ModuleList|Sequential|Fraction|StageMissingLayer|PPMissingLayer)$|"
                       r"ParallelLinear|Conv\dd|Embedding$|_pos_embed", re.I)


def _tables(registry_py: Path) -> dict[str, dict[str, tuple[str, str]]]:
    tree = ast.parse(registry_py.read_text(encoding="utf-8"))
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for stmt in tree.body:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else getattr(stmt, "target", None)
        if isinstance(target, ast.Name) and target.id in TABLES and isinstance(stmt.value, ast.Dict):
            out[target.id] = {k.value: tuple(e.value for e in v.elts)  # type: ignore[misc]
                              for k, v in zip(stmt.value.keys, stmt.value.values)
                              if isinstance(k, ast.Constant) and isinstance(v, ast.Tuple)}
    return out


class Source:
    """The parsed vLLM model sources: module name -> (files' trees), with import resolution."""

    def __init__(self, src: Path) -> None:
        self.src = src
        self.trees: dict[Path, ast.Module] = {}
        self.found: dict[tuple[str, str], tuple[Path, ast.AST] | None] = {}

    def tree(self, path: Path) -> ast.Module | None:
        if path not in self.trees:
            try:
                self.trees[path] = ast.parse(path.read_text(encoding="utf-8"))
            except (OSError, SyntaxError):
                return None
        return self.trees[path]

    def files(self, dotted: str) -> list[Path]:
        """The files of a dotted module (``vllm.model_executor.models.llava``) or package, a
        package's ``nvidia`` implementation first."""
        base = self.src.joinpath(*dotted.split("."))
        if base.with_suffix(".py").is_file():
            return [base.with_suffix(".py")]
        if base.is_dir():
            return sorted(base.rglob("*.py"), key=lambda p: ("nvidia" not in p.parts, "amd" in p.parts, str(p)))
        return []

    def dotted(self, path: Path) -> str:
        rel = path.relative_to(self.src).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        return ".".join(parts)

    def imports(self, path: Path) -> dict[str, tuple[str, str]]:
        """Local name -> (dotted module, name) for the file's ``from X import A [as B]``."""
        tree = self.tree(path)
        out: dict[str, tuple[str, str]] = {}
        if tree is None:
            return out
        pkg = self.dotted(path).split(".")
        if path.name != "__init__.py":
            pkg = pkg[:-1]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg[: len(pkg) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                for alias in node.names:
                    out[alias.asname or alias.name] = (mod, alias.name)
        return out

    def find(self, dotted: str, name: str, depth: int = 0) -> tuple[Path, ast.AST] | None:
        """The definition (class or function) of ``name`` in module ``dotted``, following re-exports."""
        if depth > 6:
            return None
        if (dotted, name) not in self.found:
            self.found[(dotted, name)] = None  # a cycle of re-exports reads as not found
            self.found[(dotted, name)] = self._find(dotted, name, depth)
        return self.found[(dotted, name)]

    def _find(self, dotted: str, name: str, depth: int) -> tuple[Path, ast.AST] | None:
        for path in self.files(dotted):
            tree = self.tree(path)
            if tree is None:
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name == name:
                    return path, node
        for path in self.files(dotted):
            imp = self.imports(path)
            if name in imp and imp[name] != (dotted, name):
                return self.find(*imp[name], depth + 1)
        return None

    def resolve(self, path: Path, name: str) -> tuple[Path, ast.AST] | None:
        """The definition a name used in ``path`` refers to (local first, then imports)."""
        local = self.find(self.dotted(path), name)
        if local is not None and local[0] == path:
            return local
        imp = self.imports(path)
        if name in imp:
            return self.find(*imp[name])
        for p in self.files(self.dotted(path)):  # a package: a sibling file defines it
            if p != path:
                hit = self.find(self.dotted(p), name)
                if hit is not None:
                    return hit
        return local

    def mro(self, path: Path, cls: ast.ClassDef, depth: int = 0) -> list[tuple[Path, ast.ClassDef]]:
        out = [(path, cls)]
        if depth > 8:
            return out
        for base in cls.bases:
            name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
            if not name or name in {"Module", "object"}:
                continue
            hit = self.resolve(path, name)
            if hit is not None and isinstance(hit[1], ast.ClassDef) and hit[1] is not cls:
                out += [x for x in self.mro(hit[0], hit[1], depth + 1) if x not in out]
        return out


def _call_names(call: ast.Call) -> list[str]:
    """The class names a call may construct: ``Cls(...)``, ``Cls.from_config(...)``, and a
    ``model_class=Cls`` keyword (``initialize_model(..., model_class=Llama4ForCausalLM)``)."""
    f = call.func
    out = []
    if isinstance(f, ast.Name):
        out.append(f.id)
    elif isinstance(f, ast.Attribute):
        out.append(f.value.id if isinstance(f.value, ast.Name) and f.value.id[:1].isupper() else f.attr)
    out += [k.value.id for k in call.keywords if isinstance(k.value, ast.Name) and k.value.id[:1].isupper()]
    return out


def _self_method(call: ast.Call) -> str | None:
    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
        return f.attr
    return None


def _calls(node: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call)]


def _registered(call: ast.Call) -> str | None:
    """An ``init_vllm_registered_model`` call's architecture, "text_config" without one."""
    if _call_names(call)[:1] != ["init_vllm_registered_model"]:
        return None
    kw = {k.arg: k.value for k in call.keywords}
    arch = kw.get("architectures")
    if isinstance(arch, (ast.List, ast.Tuple)) and arch.elts and isinstance(arch.elts[0], ast.Constant):
        return str(arch.elts[0].value)
    return "text_config"


def _kind(attr: str, name: str) -> str | None:
    for text in (name, attr):
        if AUDIO.search(text):
            return "audio"
        if VISION.search(text):
            return "vision"
    return None


class Reader:
    def __init__(self, src: Path) -> None:
        self.source = Source(src)
        registry_py = src / "vllm" / "model_executor" / "models" / "registry.py"
        self.tables = _tables(registry_py)
        self.enc_dec = _encoder_decoder(registry_py)
        text = self.tables["_TEXT_GENERATION_MODELS"]
        # registered text class -> its architecture (the key equal to the class name, else the first)
        self.text_class: dict[tuple[str, str], str] = {}
        self.text_module: dict[str, str] = {}
        for arch, (mod, cls) in text.items():
            dotted = mod if mod.startswith("vllm.") else f"vllm.model_executor.models.{mod}"
            if (dotted, cls) not in self.text_class or arch == cls:
                self.text_class[(dotted, cls)] = arch
            if dotted not in self.text_module or arch == cls:
                self.text_module[dotted] = arch

    def _in_models(self, path: Path) -> bool:
        rel = self.source.dotted(path)
        return (rel.startswith(("vllm.model_executor.models.", "vllm.models.")) and
                path.name not in {"utils.py", "interfaces.py", "interfaces_base.py", "module_mapping.py"})

    def _text_arch(self, path: Path, cls: ast.ClassDef) -> str | None:
        """The text-generation architecture a class is, or derives from (a class registered in
        ``_TEXT_GENERATION_MODELS``, else a ``...Model`` / ``...ForCausalLM`` of a module that
        registers one)."""
        chain = self.source.mro(path, cls)
        for p, c in chain:
            dotted = self.source.dotted(p)
            pkg = ".".join(dotted.split(".")[:3])
            for key in ((dotted, c.name), (pkg, c.name)):
                if key in self.text_class:
                    return self.text_class[key]
        for p, c in chain:
            dotted = self.source.dotted(p)
            if c.name.endswith(("Model", "ForCausalLM", "ModelBase", "ForCausalLMBase")):
                for mod, arch in self.text_module.items():
                    if dotted == mod or dotted.startswith(mod + "."):
                        return arch
        return None

    def _methods(self, chain: list[tuple[Path, ast.ClassDef]], name: str) -> list[tuple[Path, ast.FunctionDef]]:
        """The method ``name`` as the class chain defines it, else as any class of its module
        overrides it (a dispatching class such as MiniCPMV picks a version's subclass)."""
        for p, c in chain:
            for fn in c.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == name:
                    found = [(p, fn)]
                    break
            else:
                continue
            break
        else:
            found = []
        if found and not any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(found[0][1])):
            found = []
        if not found:
            p0 = chain[0][0]
            tree = self.source.tree(p0)
            for c in ast.walk(tree) if tree else []:
                if isinstance(c, ast.ClassDef):
                    found += [(p0, fn) for fn in c.body if isinstance(fn, ast.FunctionDef) and fn.name == name]
        return found

    def _built(self, path: Path, value: ast.AST, chain, depth: int = 0) -> list[tuple[str, Path, ast.AST | None]]:
        """What an assigned value constructs: (class name, file, definition), or
        ("init_vllm_registered_model", file, call); helper functions and self-methods followed."""
        out: list[tuple[str, Path, ast.AST | None]] = []
        if depth > 2:
            return out
        for call in _calls(value):
            if _registered(call):
                out.append(("init_vllm_registered_model", path, call))
                continue
            method = _self_method(call)
            if method:
                for p, fn in self._methods(chain, method):
                    for ret in ast.walk(fn):
                        if isinstance(ret, ast.Return) and ret.value is not None:
                            out += self._built(p, ret.value, chain, depth + 1)
                continue
            for name in _call_names(call):
                if not name[:1].isupper():
                    hit = self.source.resolve(path, name) if name != "super" else None
                    if hit and isinstance(hit[1], ast.FunctionDef) and self._in_models(hit[0]):
                        for ret in ast.walk(hit[1]):
                            if isinstance(ret, ast.Return) and ret.value is not None:
                                out += self._built(hit[0], ret.value, chain, depth + 1)
                    continue
                hit = self.source.resolve(path, name)
                out.append((name, hit[0] if hit else path, hit[1] if hit else None))
        return out

    def _scan(self, path: Path, cls: ast.ClassDef, depth: int = 0) -> tuple[list[str], str, list[dict], str | None]:
        """(language models, how, towers, own decoder class) of a class and its bases."""
        chain = self.source.mro(path, cls)
        lms: list[str] = []
        how = ""
        towers: list[dict] = []
        own: str | None = None
        replaced: set[str] = set()  # attributes a more derived class of the chain assigns
        for p, c in chain:
            mine: set[str] = set()
            for fn in c.body:
                if not isinstance(fn, ast.FunctionDef) or fn.name != "__init__":
                    continue
                local = {t.id: n.value for n in ast.walk(fn) if isinstance(n, ast.Assign)
                         for t in n.targets if isinstance(t, ast.Name)}  # lm = init_...(); self.lm = lm
                for node in ast.walk(fn):
                    if isinstance(node, ast.Assign):
                        targets = node.targets
                    elif isinstance(node, ast.AnnAssign) and node.value is not None:  # self.x: T = ...
                        targets = [node.target]
                    else:
                        continue
                    attrs = [t.attr for t in targets if isinstance(t, ast.Attribute)
                             and isinstance(t.value, ast.Name) and t.value.id == "self"]
                    if not attrs:
                        continue
                    attr = attrs[0]
                    if attr in replaced:  # the subclass's own assignment wins over its base's
                        continue
                    mine.add(attr)
                    value = node.value
                    if isinstance(value, ast.Name) and value.id in local and attr in LM_ATTRS | TOWER_ATTRS:
                        value = local[value.id]
                    for name, p2, defn in self._built(p, value, chain):
                        if name == "init_vllm_registered_model":
                            arch = _registered(defn)  # type: ignore[arg-type]
                            if arch and arch not in lms and (not lms or how == "init_vllm_registered_model"):
                                lms.append(arch)
                                how = "init_vllm_registered_model"
                            continue
                        if not isinstance(defn, ast.ClassDef) or not self._in_models(p2):
                            if attr in TOWER_ATTRS and not PROJECTOR.search(name):
                                kind = _kind(attr, name)
                                if kind and not any(t["attr"] == attr for t in towers):
                                    towers.append({"attr": attr, "class": name, "kind": kind})
                            continue
                        text = self._text_arch(p2, defn)
                        if text:
                            if text not in lms and how in ("", f"builds {name}", "builds"):
                                lms.append(text)
                                how = "builds"
                            continue
                        if attr in LM_ATTRS and depth < 2:
                            inner_lms, inner_how, inner_towers, inner_own = self._scan(p2, defn, depth + 1)
                            towers += [t for t in inner_towers if not any(t["class"] == u["class"] for u in towers)]
                            if inner_lms and not lms:
                                lms, how = inner_lms, "builds"
                            elif not inner_lms and own is None:
                                own = inner_own or name
                            continue
                        kind = _kind(attr, name)
                        if kind and not PROJECTOR.search(attr) and not PROJECTOR.search(name) \
                                and not any(t["class"] == name or t["attr"] == attr for t in towers):
                            towers.append({"attr": attr, "class": name, "kind": kind})
            replaced |= mine
        return lms, how, towers, own

    def read(self, arch: str, mod: str, cls_name: str) -> dict:
        dotted = mod if mod.startswith("vllm.") else f"vllm.model_executor.models.{mod}"
        entry: dict = {"module": mod, "class": cls_name}
        if arch in self.enc_dec:
            entry["encoder_decoder"] = True
        if (dotted, cls_name) in self.text_class:
            entry.update(language_models=[self.text_class[(dotted, cls_name)]], how="the text class itself", towers=[])
            return entry
        hit = self.source.find(dotted, cls_name)
        if hit is None or not isinstance(hit[1], ast.ClassDef):
            entry.update(language_models=[], how="class not found", towers=[])
            return entry
        path, cls = hit
        lms, how, towers, own = self._scan(path, cls)
        if not lms:
            text = self._text_arch(path, cls)
            if text:
                lms, how = [text], "derives from"
        if not towers:  # a tower built out of sight (a base's transformer_type=...): the module's own
            tree = self.source.tree(path)
            named = [c.name for c in (tree.body if tree else []) if isinstance(c, ast.ClassDef)
                     and c.name.endswith(("Model", "Transformer", "Encoder", "Tower", "ViT"))
                     and _kind("", c.name) and not PROJECTOR.search(c.name)]
            if named:
                towers = [{"attr": None, "class": named[-1], "kind": _kind("", named[-1])}]
        if any(isinstance(b, ast.Name) and b.id == "IsAttentionFree" for b in cls.bases):
            entry["attention_free"] = True
        if not lms and own:
            lms, how = ["own"], f"own decoder ({own})"
            entry["own_decoder"] = own
        kinds = sorted({t["kind"] for t in towers})
        entry.update(language_models=lms, how=how or "not found", towers=towers,
                     tower_kind="+".join(kinds) if kinds else None)
        return entry


def _encoder_decoder(registry_py: Path) -> set[str]:
    """The keys of ``_MULTIMODAL_MODELS`` listed under its ``# [Encoder-decoder]`` comment."""
    lines = registry_py.read_text(encoding="utf-8").splitlines()
    out: set[str] = set()
    inside = table = False
    for line in lines:
        if line.startswith("_MULTIMODAL_MODELS"):
            table = True
        elif table and line.startswith("}"):
            break
        elif table and "# [Encoder-decoder]" in line:
            inside = True
        elif table and inside:
            m = re.match(r'\s*"(\w+)":', line)
            if m:
                out.add(m.group(1))
    return out


def main(argv: list[str]) -> int:
    src, version = Path(argv[0]), argv[1]
    reader = Reader(src)
    out: dict[str, dict[str, dict]] = {}
    for table, cat in (("_MULTIMODAL_MODELS", "multimodal"), ("_EMBEDDING_MODELS", "embedding")):
        out[cat] = {arch: reader.read(arch, mod, cls) for arch, (mod, cls) in sorted(reader.tables[table].items())}
    doc = {"vllm_version": version,
           "source": f"vllm {version}: model_executor/models/registry.py's _MULTIMODAL_MODELS and _EMBEDDING_MODELS, "
                     "each class read with ast (its bases, init_vllm_registered_model calls, self.<attr> = Cls(...)) "
                     "by bench/vllm_architectures/mm_language_models.py",
           **out}
    OUT.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    n = sum(len(v) for v in out.values())
    print(f"wrote {OUT.relative_to(ROOT)}: {n} architectures")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
