"""The documents run as written.

A user learns tensorlang from README.md, docs/language.md and docs/api.md and copies their
examples.  Every fenced program in them must compile (calling functions defined in an earlier
block of the same document, as a reader who pasted them in order would); a program followed by
an error message must give exactly that message; a program quoted from examples/ must be the
example's text; and the Python blocks of each document run in order in one namespace from the
repository's root, `>>>` sessions printing what they show."""
import doctest
import pathlib
import re

import pytest

import tensorlang as tl

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ("README.md", "docs/language.md", "docs/api.md")
ERROR_LINE = re.compile(r"^(?P<file>[\w./-]+\.tl):\d+:\d+: error: ", re.M)
DEF = re.compile(r"^def (\w+)\(", re.M)
QUOTED = re.compile(r"^#\s*(?:examples/)?(\w+)\.tl\b")


def fenced(doc: str) -> list[tuple[str, int, str]]:
    """The fenced blocks of `doc`: (language tag, line of the opening fence, text)."""
    text = (ROOT / doc).read_text()
    return [(m.group(1), text[:m.start()].count("\n") + 1, m.group(2))
            for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)]


def functions(text: str) -> dict[str, str]:
    """The functions defined in `text`, name -> source (from `def` to the next `def`)."""
    starts = [m.start() for m in DEF.finditer(text)] + [len(text)]
    return {DEF.match(text, a).group(1): text[a:b] for a, b in zip(starts, starts[1:])}


def is_program(lang: str, text: str) -> bool:
    # `def NAME(PARAM, ...)` is the grammar's template, and a block of `$ ` lines a shell
    # session (what a command prints), not programs
    return (not lang and bool(DEF.search(text)) and "NAME(" not in text
            and not text.lstrip().startswith("$ "))


def program_cases():
    cases = []
    for doc in DOCS:
        blocks = fenced(doc)
        for n, (lang, line, text) in enumerate(blocks):
            if is_program(lang, text):
                following = blocks[n + 1][2] if n + 1 < len(blocks) else ""
                expected = following if ERROR_LINE.match(following) else None
                cases.append(pytest.param(doc, n, expected, id=f"{doc}:{line}"))
    return cases


def with_earlier_callees(doc: str, n: int) -> str:
    """Block `n` of `doc`, preceded by the functions it calls that earlier program blocks
    of the document define and it does not."""
    blocks = fenced(doc)
    text = blocks[n][2]
    known: dict[str, str] = {}
    for lang, _, earlier in blocks[:n]:
        if is_program(lang, earlier):
            known.update(functions(earlier))
    own = functions(text)
    wanted, pending = {}, [text]
    while pending:
        for name in re.findall(r"\b(\w+)\(", pending.pop()):
            if name in known and name not in own and name not in wanted:
                wanted[name] = known[name]
                pending.append(known[name])
    # in the document's order: a function is defined before its callers
    return "".join(known[name] for name in known if name in wanted) + text


@pytest.mark.parametrize("doc, n, expected", program_cases())
def test_documented_programs_compile_or_fail_as_shown(doc, n, expected):
    source = with_earlier_callees(doc, n)
    if expected is None:
        module = tl.parse(source, filename=f"{doc}:block{n}")
        for name in functions(fenced(doc)[n][2]):
            module[name].optimized_program()
        return
    filename = ERROR_LINE.match(expected).group("file")
    with pytest.raises(tl.TLError) as err:
        tl.parse(source, filename=filename)
    assert str(err.value).strip() == expected.strip()


def quoted_cases():
    cases = []
    for doc in DOCS:
        for lang, line, text in fenced(doc):
            if not is_program(lang, text):
                continue
            example = None
            for row in text.splitlines():
                m = QUOTED.match(row)
                if m and (ROOT / "examples" / f"{m.group(1)}.tl").exists():
                    example = m.group(1)
                name = DEF.match(row)
                if name and example:
                    cases.append(pytest.param(doc, line, example, name.group(1),
                                              id=f"{doc}:{line}:{name.group(1)}"))
    return cases


def test_some_blocks_quote_the_examples():
    assert len(quoted_cases()) >= 5


@pytest.mark.parametrize("doc, line, example, name", quoted_cases())
def test_a_quoted_example_is_the_examples_text(doc, line, example, name):
    block = next(text for _, at, text in fenced(doc) if at == line)
    assert name in functions(block)
    ours = functions((ROOT / "examples" / f"{example}.tl").read_text())
    assert name in ours, f"{doc}:{line} quotes {name} from examples/{example}.tl, which has no such function"
    # the same Tensor SSA program (a quote may wrap a long line, or drop a comment)
    quoted = tl.parse(with_earlier_callees(doc, [at for _, at, _ in fenced(doc)].index(line)),
                      filename=f"{doc}:{line}")
    assert quoted[name].program == tl.load(ROOT / "examples" / f"{example}.tl")[name].program


@pytest.mark.parametrize("doc", [d for d in DOCS if any(lang == "python" for lang, _, _ in fenced(d))])
def test_python_blocks_run_in_order(doc, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    space: dict = {"__name__": "__docs__"}
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for lang, line, text in fenced(doc):
        if lang != "python":
            continue
        if text.lstrip().startswith(">>>"):
            test = doctest.DocTestParser().get_doctest(text, space, f"{doc}:{line}", doc, line)
            result = runner.run(test, clear_globs=False)
            assert result.failed == 0, f"the session at {doc}:{line} printed something else"
            space.update(test.globs)
        else:
            exec(compile(text, f"{doc}:{line}", "exec"), space)  # noqa: S102
    capsys.readouterr()


def session_cases():
    """Shell sessions of the documents (`$ tensorlang ...` followed by what it prints)
    whose every command shows its output."""
    cases = []
    for doc in DOCS:
        for lang, line, text in fenced(doc):
            if lang or not text.lstrip().startswith("$ tensorlang "):
                continue
            commands, current = [], None
            for row in text.splitlines():
                if row.startswith("$ "):
                    current = [row[2:], []]
                    commands.append(current)
                else:
                    current[1].append(row)
            if all(shown for _, shown in commands):
                cases.append(pytest.param(doc, commands, id=f"{doc}:{line}"))
    return cases


def test_some_sessions_are_checked():
    assert len(session_cases()) >= 3


@pytest.mark.parametrize("doc, commands", session_cases())
def test_documented_sessions_print_what_they_show(doc, commands, monkeypatch, capsys):
    """The same output, line for line; a timing line (`time: ...`) only by its start, and a
    number printed as the value of a run on generated inputs to nine digits."""
    import shlex
    from tensorlang.cli import main
    monkeypatch.chdir(ROOT)
    for command, shown in commands:
        argv = shlex.split(command)
        assert argv[0] == "tensorlang"
        capsys.readouterr()
        main(argv[1:])
        printed = capsys.readouterr().out.rstrip("\n").splitlines()
        assert len(printed) == len(shown), (command, printed)
        for got, want in zip(printed, shown):
            if want.startswith("time: "):
                assert got.startswith("time: "), (command, got)
            else:
                assert _same_line(got, want), (command, got, want)


def _same_line(got: str, want: str) -> bool:
    number = r"-?\d+\.\d{6,}(?:e[-+]?\d+)?"
    if re.sub(number, "#", got) != re.sub(number, "#", want):
        return False
    return all(abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(b)))
               for a, b in zip(re.findall(number, got), re.findall(number, want)))
