/**
 * The fake shell's pure parts, construct by construct: the parser (compound commands,
 * functions, pipelines, `$(...)`, `${...}` forms, syntax errors with dash's words, refusals),
 * sh pattern matching, word expansion (IFS splitting, `$@`/`$*`, defaults, affix removal,
 * tildes), `printf`/`echo` and `test`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  expandAssignment,
  expandFields,
  expandString,
  type Parameters
} from "../../src/internal/fakeShellExpand.js"
import { compile, type Field, matches, removeAffix } from "../../src/internal/fakeShellPatterns.js"
import { echo, printf } from "../../src/internal/fakeShellPrintf.js"
import {
  type Command,
  type CompoundBody,
  parse,
  parseLines,
  type Segment,
  ShellSyntaxError,
  Unsupported,
  type Word
} from "../../src/internal/fakeShellSyntax.js"
import { type FileAccess, runTest } from "../../src/internal/fakeShellTest.js"

const only = (text: string): Command => {
  const script = parse(text)
  assert.strictEqual(script.length, 1, text)
  const pipeline = script[0]!.first
  assert.strictEqual(pipeline.commands.length, 1, text)
  return pipeline.commands[0]!
}

const compound = (text: string): CompoundBody => {
  const command = only(text)
  assert.strictEqual(command._tag, "Compound", text)
  return (command as Extract<Command, { _tag: "Compound" }>).body
}

const text = (word: Word) => word.map((s) => (s._tag === "Text" ? s.text : `<${s._tag}>`)).join("")

const refused = (script: string, what: RegExp) => {
  try {
    parse(script)
  } catch (error) {
    assert.instanceOf(error, Unsupported, script)
    assert.match((error as Error).message, what, script)
    return
  }
  assert.fail(`not refused: ${script}`)
}

const syntaxError = (script: string, message: string, line: number) => {
  try {
    parse(script)
  } catch (error) {
    assert.instanceOf(error, ShellSyntaxError, script)
    assert.strictEqual((error as ShellSyntaxError).message, message, script)
    assert.strictEqual((error as ShellSyntaxError).line, line, script)
    return
  }
  assert.fail(`parsed: ${script}`)
}

describe("fake shell parser", () => {
  it("if / elif / else / fi, with a negated condition", () => {
    const body = compound("if ! a; then b; elif c\nthen d; else e; fi")
    assert.strictEqual(body._tag, "If")
    if (body._tag !== "If") return
    assert.strictEqual(body.branches.length, 2)
    assert.isTrue(body.branches[0]!.condition[0]!.first.negated)
    assert.strictEqual(body.otherwise?.length, 1)
  })

  it("for over words, for over the parameters, while, until, groups and subshells", () => {
    const words = compound("for x in a 'b c' $y; do echo; done")
    assert.deepStrictEqual(words._tag === "For" ? words.words?.map(text) : undefined, ["a", "b c", "<Param>"])
    const params = compound("for x\ndo echo; done")
    assert.isTrue(params._tag === "For" && params.words === undefined)
    assert.isTrue(compound("while a; do b; done")._tag === "Loop")
    const until = compound("until a; do b; done")
    assert.isTrue(until._tag === "Loop" && until.until)
    assert.strictEqual(compound("{ a; b; }")._tag, "Group")
    assert.strictEqual(compound("(a; b)")._tag, "Subshell")
  })

  it("case with alternatives, a parenthesised pattern, quoted parts and an empty item", () => {
    const body = compound(`case $w in python|python[0-9]*) a ;; (*" $1 "*) ;; '~/'*) b;; esac`)
    assert.strictEqual(body._tag, "Case")
    if (body._tag !== "Case") return
    assert.deepStrictEqual(
      body.items.map((i) => i.patterns.map(text)),
      [["python", "python[0-9]*"], ["* <Param> *"], ["~/*"]]
    )
    assert.strictEqual(body.items[1]!.body.length, 0)
  })

  it("function definitions, with any compound body and redirections", () => {
    const f = only("try_python() {\n  return 1\n} >/dev/null")
    assert.strictEqual(f._tag, "Function")
    if (f._tag !== "Function") return
    assert.strictEqual(f.name, "try_python")
    assert.strictEqual(f.body._tag === "Compound" ? f.body.redirects.length : -1, 1)
  })

  it("pipelines and and-or lists across newlines", () => {
    const [list] = parse("a | b |\n c && \n d || e")
    assert.strictEqual(list!.first.commands.length, 3)
    assert.deepStrictEqual(
      list!.rest.map((r) => r.op),
      ["&&", "||"]
    )
  })

  it("$(...) is parsed from the same text: quotes, nested $(...), case patterns and ) inside", () => {
    const [list] = parse(`x=$(printf '%s)' "$(echo "a)")" | tail -n 1; case y in y) echo ;; esac)`)
    const simple = list!.first.commands[0]!
    assert.strictEqual(simple._tag, "Simple")
    if (simple._tag !== "Simple") return
    const segment = simple.assignments[0]!.value[0] as Extract<Segment, { _tag: "Command" }>
    assert.strictEqual(segment._tag, "Command")
    assert.strictEqual(segment.script.length, 2)
    assert.strictEqual(segment.script[0]!.first.commands.length, 2)
  })

  it(`\${...} forms: defaults, affix removal with quoted patterns, length, special parameters`, () => {
    const simple = only(`echo \${u:-a b} "\${1#'~/'}" \${line##*/} \${#x} $@ "$*" $# \${10}`)
    if (simple._tag !== "Simple") return assert.fail()
    const segments = simple.words.slice(1).map((w) => w[0]!)
    assert.deepStrictEqual(
      segments.map((s) =>
        s._tag === "ParamOp"
          ? `${s.name}${s.op}${text(s.arg)}`
          : s._tag === "Text"
            ? s.text
            : `${s._tag}:${"name" in s ? s.name : ""}`
      ),
      ["u:-a b", "1#~/", "line##*/", "Length:x", "Param:@", "Param:*", "Param:#", "Param:10"]
    )
    const quotedPattern = (segments[1] as Extract<Segment, { _tag: "ParamOp" }>).arg[0]!
    assert.isTrue(quotedPattern._tag === "Text" && quotedPattern.quoted)
  })

  it("syntax errors are dash's, with the line", () => {
    syntaxError("if true; then\necho", 'Syntax error: end of file unexpected (expecting "fi")', 2)
    syntaxError("echo a\nfi", 'Syntax error: "fi" unexpected', 2)
    syntaxError("echo )", 'Syntax error: ")" unexpected', 1)
    syntaxError("{ echo a }", 'Syntax error: end of file unexpected (expecting "}")', 1)
    syntaxError("for 1 in a; do :; done", "Syntax error: Bad for loop variable", 1)
    syntaxError("echo 'open", "Syntax error: Unterminated quoted string", 1)
  })

  it("the lines before a syntax error are kept (dash runs them), the failing line is not", () => {
    const { script, error } = parseLines("echo a\necho b; if")
    assert.strictEqual(script.length, 1)
    assert.strictEqual(error?.line, 2)
  })

  it("what the fake does not model is refused by name", () => {
    refused("a &", /background job &/)
    refused("a `b`", /command substitution `...`/)
    refused("echo $((1 + 2))", /arithmetic expansion/)
    refused("cat <<EOF\nx\nEOF", /here-document/)
    refused(`echo \${x:=y}`, /parameter expansion \$\{x:=\.\.\.\}/)
    refused(`echo \${x?no}`, /parameter expansion \$\{x\?\.\.\.\}/)
    refused("echo $!", /special parameter \$!/)
    refused("function f { :; }", /reserved word "function"/)
    refused("a <> b", /redirection <>/)
  })
})

const params = (vars: Record<string, string>, positional: ReadonlyArray<string> = []): Parameters => ({
  lookup: (name) =>
    /^\d+$/.test(name) ? positional[Number(name) - 1] : name === "#" ? String(positional.length) : vars[name],
  positional
})

const word = (script: string): Word => {
  const simple = only(`: ${script}`)
  if (simple._tag !== "Simple") throw new Error("not simple")
  return simple.words[1]!
}

const fieldsOf = (script: string, p: Parameters) =>
  expandFields(word(script), p).map((f) => f.map((x) => x.text).join(""))

describe("fake shell expansion", () => {
  it("splits unquoted expansions at IFS: blanks collapse, other characters delimit empty fields", () => {
    const p = params({ x: "  a  b ", y: "a::b:", IFS_ALT: "" })
    assert.deepStrictEqual(fieldsOf("$x", p), ["a", "b"])
    assert.deepStrictEqual(fieldsOf('"$x"', p), ["  a  b "])
    assert.deepStrictEqual(fieldsOf("c$x", p), ["c", "a", "b"])
    assert.deepStrictEqual(fieldsOf("$y", { ...p, lookup: (n) => (n === "IFS" ? ":" : p.lookup(n)) }), [
      "a",
      "",
      "b"
    ])
    assert.deepStrictEqual(fieldsOf("$x", { ...p, lookup: (n) => (n === "IFS" ? "" : p.lookup(n)) }), [
      "  a  b "
    ])
    assert.deepStrictEqual(fieldsOf("$unset", p), [])
    assert.deepStrictEqual(fieldsOf('"$unset"', p), [""])
  })

  it('"$@" is one field per parameter (none without), $* joins them with IFS\'s first character', () => {
    const p = params({}, ["a b", "", "c"])
    assert.deepStrictEqual(fieldsOf('"$@"', p), ["a b", "", "c"])
    assert.deepStrictEqual(fieldsOf('x"$@"y', p), ["xa b", "", "cy"])
    assert.deepStrictEqual(fieldsOf("$@", p), ["a", "b", "c"])
    assert.deepStrictEqual(fieldsOf('"$*"', p), ["a b  c"])
    assert.deepStrictEqual(fieldsOf('"$@"', params({}, [])), [])
    assert.strictEqual(expandString(word("$@"), p), "a b  c")
  })

  it("defaults use their word only when needed, split when unquoted; affix removal takes quoted patterns", () => {
    const p = params({ e: "", s: "~/a/b.c.d", HOME: "/h" })
    assert.deepStrictEqual(fieldsOf(`\${u:-a  b}`, p), ["a", "b"])
    assert.deepStrictEqual(fieldsOf(`\${u:-'a  b'}`, p), ["a  b"])
    assert.deepStrictEqual(fieldsOf(`"\${u:-'x'}"`, p), ["'x'"])
    assert.deepStrictEqual(fieldsOf(`\${e-set}`, p), [])
    assert.deepStrictEqual(fieldsOf(`"\${e:+alt}"`, p), [""])
    assert.deepStrictEqual(fieldsOf(`\${s+alt}`, p), ["alt"])
    assert.deepStrictEqual(
      [`\${s#*/}`, `\${s##*/}`, `\${s%.*}`, `\${s%%.*}`, `\${s#'~/'}`, `\${s#~/}`, `\${#s}`].map(
        (w) => fieldsOf(w, p)[0]
      ),
      ["a/b.c.d", "b.c.d", "~/a/b.c", "~/a/b", "a/b.c.d", "~/a/b.c.d", "9"]
    )
  })

  it("tildes: at a word's start up to a slash; in assignments after each colon too", () => {
    const p = params({ HOME: "/h" })
    assert.deepStrictEqual(fieldsOf("~/x", p), ["/h/x"])
    assert.deepStrictEqual(fieldsOf("'~'/x", p), ["~/x"])
    assert.deepStrictEqual(fieldsOf("a:~", p), ["a:~"])
    assert.strictEqual(expandAssignment(word("~/a:~/b:c~"), p), "/h/a:/h/b:c~")
    assert.strictEqual(expandAssignment(word("a:~"), p), "a:/h")
    assert.strictEqual(expandAssignment(word('"~":~'), p), "~:/h")
  })
})

const pattern = (text: string): Field => [{ text, quoted: false }]

describe("fake shell patterns", () => {
  it("*, ?, brackets with ranges, negation and classes; quoted parts literal", () => {
    const cases: ReadonlyArray<readonly [Field, string, boolean]> = [
      [pattern("python[0-9]*"), "python3.11", true],
      [pattern("python[0-9]*"), "pythonx", false],
      [pattern("a?"), "ab", true],
      [pattern("a?"), "abc", false],
      [pattern("[!a-c]*"), "dog", true],
      [pattern("[^a-c]*"), "cat", false],
      [pattern("[[:digit:]]x"), "7x", true],
      [pattern("[]]"), "]", true],
      [pattern("[a"), "[a", true],
      [pattern("\\*"), "*", true],
      [pattern("\\*"), "a", false],
      [
        [
          { text: "*", quoted: false },
          { text: '"versionSource": "', quoted: true },
          { text: "*", quoted: false }
        ],
        '{"versionSource": "metadata"}',
        true
      ],
      [[{ text: "*", quoted: true }], "abc", false],
      [pattern("*"), "multi\nline", true]
    ]
    for (const [p, subject, expected] of cases)
      assert.strictEqual(matches(p, subject), expected, `${compile(p)} ${subject}`)
  })

  it("removes the shortest or longest prefix or suffix", () => {
    assert.strictEqual(removeAffix("a/b/c", pattern("*/"), "#"), "b/c")
    assert.strictEqual(removeAffix("a/b/c", pattern("*/"), "##"), "c")
    assert.strictEqual(removeAffix("a/b/c", pattern("/*"), "%"), "a/b")
    assert.strictEqual(removeAffix("a/b/c", pattern("/*"), "%%"), "a")
    assert.strictEqual(removeAffix("abc", pattern("x"), "#"), "abc")
  })
})

describe("fake shell printf and echo", () => {
  it("printf: %s %d %x, width, precision, escapes, the format reused for extra arguments", () => {
    assert.deepStrictEqual(printf("%s=%d\\t|%5s|%-3s|%x\\n", ["a", "42", "ab", "c", "255", "b", "7"]), {
      output: "a=42\t|   ab|c  |ff\nb=7\t|     |   |0\n",
      errors: []
    })
    assert.strictEqual(printf("%s\\n", []).output, "\n")
    assert.strictEqual(printf("x\\n", ["a", "b"]).output, "x\n")
    assert.strictEqual(printf("%.2s|%05d|%+d|%c", ["abc", "42", "5", "hello"]).output, "ab|00042|+5|h")
    assert.strictEqual(printf("\\101%b|", ["x\\ty", "a\\cb"]).output, "Ax\ty|Aa")
    assert.deepStrictEqual(printf("%d", ["abc"]), { output: "0", errors: ["abc: expected numeric value"] })
    assert.strictEqual(printf("%q", ["x"]).invalid, "%q: invalid directive")
    assert.throws(() => printf("%f", ["1"]), Unsupported)
  })

  it("echo: dash's, with -n and escapes (\\c ends all output)", () => {
    assert.strictEqual(echo(["a\\tb", "c"]), "a\tb c\n")
    assert.strictEqual(echo(["-n", "x"]), "x")
    assert.strictEqual(echo(["-e", "x"]), "-e x\n")
    assert.strictEqual(echo(["a\\0101b", "\\c", "z"]), "aAb ")
  })
})

describe("fake shell test", () => {
  const files: Record<string, FileAccess> = {
    "/bin/python": { isDirectory: false, size: 10, readable: true, writable: false, executable: true },
    "/d": { isDirectory: true, size: 4096, readable: true, writable: true, executable: true }
  }
  const t = (...args: Array<string>) => runTest(args, false, (p) => Effect.succeed(files[p]))

  it.effect("file, string and integer operators, ! and parentheses, by the number of arguments", () =>
    Effect.gen(function* () {
      const cases: ReadonlyArray<readonly [ReadonlyArray<string>, 0 | 1]> = [
        [[], 1],
        [[""], 1],
        [["x"], 0],
        [["-x", "/bin/python"], 0],
        [["!", "-x", "/bin/python"], 1],
        [["-d", "/bin/python"], 1],
        [["-d", "/d"], 0],
        [["-f", "/d"], 1],
        [["-e", "/nothing"], 1],
        [["-r", "/bin/python"], 0],
        [["-w", "/bin/python"], 1],
        [["-s", "/bin/python"], 0],
        [["-n", ""], 1],
        [["-z", ""], 0],
        [["a", "=", "a"], 0],
        [["a", "!=", "a"], 1],
        [["3", "-ne", "4"], 0],
        [[" 4", "-eq", "4 "], 0],
        [["-1", "-lt", "0"], 0],
        [["x", "-a", ""], 1],
        [["x", "-o", ""], 0],
        [["!", "a", "=", "b"], 0],
        [["(", "a", ")"], 0],
        [["-n"], 0]
      ]
      for (const [args, status] of cases)
        assert.deepStrictEqual(yield* t(...args), { status }, args.join(" "))
      assert.deepStrictEqual(yield* t("a", "-eq", "1"), { error: "Illegal number: a" })
      assert.deepStrictEqual(yield* t("a", "b"), { error: "a: unexpected operator" })
      assert.deepStrictEqual(yield* runTest(["a"], true, () => Effect.succeed(undefined)), {
        error: "missing ]"
      })
      assert.deepStrictEqual(yield* runTest(["a", "]"], true, () => Effect.succeed(undefined)), { status: 0 })
      const refusedTest = yield* Effect.flip(t("a", "-nt", "b"))
      assert.instanceOf(refusedTest, Unsupported)
      assert.instanceOf(yield* Effect.flip(t("a", "=", "b", "-a", "c", "=", "d")), Unsupported)
    })
  )
})
