//! A nesting-depth limit checked before parsing, so that no input can overflow a parser's
//! stack. What makes the parsers recurse is counted by a small lexer that skips strings and
//! comments: brackets and blocks, Python indentation, and chains of right-recursive
//! operators (prefix `-`/`not`/`&`/`*`/closures, `**`, Rust assignments, `return`).
//! Binary operators, calls, method chains and `else if` parse in loops: they count towards
//! a far larger limit, as the tree they build is as deep.

use crate::model::outcome::Language;

/// Deeper than any real code; CPython itself stops at 200 nested parentheses.
pub const MAX_DEPTH: usize = 200;
/// Operators in one expression (binary chains, calls, casts, `else if`): parsed in loops,
/// but each is a level of the tree that visitors and drops recurse through.
pub const MAX_CHAIN: usize = 5000;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("nesting too deep: {depth} levels at {line}:{column} (the limit is {MAX_DEPTH} nested, {MAX_CHAIN} chained)")]
pub struct TooDeep {
    pub depth: usize,
    pub line: usize,
    pub column: usize,
}

pub fn check(language: Language, text: &str) -> Result<(), TooDeep> {
    let mut lexer = Depth::new(text, language);
    match lexer.run() {
        Ok(()) => Ok(()),
        Err(at) => {
            let (line, column) = crate::model::finding::line_column(text, at);
            Err(TooDeep {
                depth: lexer.reported(),
                line,
                column,
            })
        }
    }
}

struct Depth<'a> {
    bytes: &'a [u8],
    python: bool,
    i: usize,
    /// Operator chains, one per open bracket (the first for the top level).
    chains: Vec<usize>,
    /// Every operator of the expression, one per open bracket.
    links: Vec<usize>,
    /// The sums of `chains` and `links`, kept as they change: the guard runs at every
    /// operator and bracket.
    chain_sum: usize,
    link_sum: usize,
    /// Python indentation widths of the enclosing blocks.
    indents: Vec<usize>,
    /// The last token was an operand (a name, literal or closing bracket).
    after_operand: bool,
    /// Rust: the last token was a `}` back at the top level or in a `{` block (an `impl`, a
    /// `mod`, a function body): an item may have ended there.
    closed_item: bool,
    /// Whether each open bracket is a `{` (the first, the top level, counts as one).
    braces: Vec<bool>,
}

impl<'a> Depth<'a> {
    fn new(text: &'a str, language: Language) -> Depth<'a> {
        Depth {
            bytes: text.as_bytes(),
            python: language == Language::Python,
            i: 0,
            chains: vec![0],
            links: vec![0],
            chain_sum: 0,
            link_sum: 0,
            indents: vec![0],
            after_operand: false,
            closed_item: false,
            braces: vec![true],
        }
    }

    /// The depth reported: nesting, or the length of the longest expression.
    fn reported(&self) -> usize {
        self.total().max(self.link_sum)
    }

    fn total(&self) -> usize {
        self.chains.len() - 1 + self.chain_sum + self.indents.len() - 1
    }

    /// The current bracket's chain and operators start again (a comma, a new line).
    fn reset_last(&mut self) {
        let chain = self.chains.last_mut().expect("never empty");
        self.chain_sum -= std::mem::take(chain);
        let link = self.links.last_mut().expect("never empty");
        self.link_sum -= std::mem::take(link);
    }

    fn guard(&self, at: usize) -> Result<(), usize> {
        if self.total() > MAX_DEPTH || self.link_sum > MAX_CHAIN {
            return Err(at);
        }
        Ok(())
    }

    fn peek(&self, k: usize) -> u8 {
        self.bytes.get(self.i + k).copied().unwrap_or(0)
    }

    fn run(&mut self) -> Result<(), usize> {
        if self.python {
            self.indent()?;
        }
        while self.i < self.bytes.len() {
            let start = self.i;
            let b = self.peek(0);
            // Rust: a new item after one that ended with `}` at the top level or in a block (a
            // struct, an `impl`, a function): no expression runs on across the two, so that
            // level's operator count starts again (a bindgen file of 40,000 lines is thousands
            // of items none of which ends with `;`; tch's `impl Tensor` holds thousands of
            // methods). Only the word or `#` right after that `}` does it: within one
            // expression a `}` is never followed by an item's first word.
            if self.closed_item && !matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' | b'/') {
                self.closed_item = false;
                if b == b'#' || self.item_word_at(self.i) {
                    self.reset_last();
                }
            }
            match b {
                b'\n' => {
                    self.i += 1;
                    if self.python && self.chains.len() == 1 {
                        self.reset_last();
                        self.after_operand = false;
                        self.indent()?;
                    }
                }
                b' ' | b'\t' | b'\r' | b'\x0c' => {
                    // A run of blanks at once (indentation is most of a file's bytes).
                    let rest = &self.bytes[self.i + 1..];
                    let blanks = rest
                        .iter()
                        .position(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\x0c'))
                        .unwrap_or(rest.len());
                    self.i += 1 + blanks;
                }
                b'\\' if self.python => self.i += 2,
                b'#' if self.python => self.skip_line(),
                b'/' if !self.python && self.peek(1) == b'/' => self.skip_line(),
                b'/' if !self.python && self.peek(1) == b'*' => self.skip_block_comment(),
                b'"' => self.string(),
                b'\'' if self.python => self.string(),
                b'\'' => self.char_or_lifetime(),
                b'(' | b'[' | b'{' => {
                    self.i += 1;
                    if self.after_operand {
                        self.link(start)?;
                    }
                    self.chains.push(0);
                    self.links.push(0);
                    self.braces.push(b == b'{');
                    self.after_operand = false;
                    self.guard(start)?;
                }
                b')' | b']' | b'}' => {
                    self.i += 1;
                    if self.chains.len() > 1 {
                        self.chain_sum -= self.chains.pop().expect("more than one");
                        self.link_sum -= self.links.pop().expect("more than one");
                        self.braces.pop();
                        // Back in a block of items or statements (the top level, an `impl`
                        // of thousands of methods): an item may start next.
                        self.closed_item = !self.python
                            && b == b'}'
                            && self.braces.last().copied().unwrap_or(true);
                    }
                    self.after_operand = true;
                }
                b',' | b';' => {
                    self.i += 1;
                    self.reset_last();
                    self.after_operand = false;
                }
                _ if b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80 => self.word(start)?,
                _ => self.operator(start)?,
            }
        }
        Ok(())
    }

    /// Rust: the word at `i` begins an item (`pub`, `fn`, `struct`, `impl`, …).
    fn item_word_at(&self, i: usize) -> bool {
        let rest = &self.bytes[i..];
        let end = rest
            .iter()
            .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_'))
            .unwrap_or(rest.len());
        matches!(
            &rest[..end],
            b"pub"
                | b"fn"
                | b"struct"
                | b"enum"
                | b"union"
                | b"impl"
                | b"mod"
                | b"use"
                | b"trait"
                | b"type"
                | b"const"
                | b"static"
                | b"extern"
                | b"unsafe"
                | b"async"
                | b"macro_rules"
        )
    }

    fn link(&mut self, at: usize) -> Result<(), usize> {
        *self.links.last_mut().expect("never empty") += 1;
        self.link_sum += 1;
        self.guard(at)
    }

    fn chain(&mut self, at: usize) -> Result<(), usize> {
        *self.chains.last_mut().expect("never empty") += 1;
        self.chain_sum += 1;
        self.guard(at)
    }

    fn word(&mut self, start: usize) -> Result<(), usize> {
        let bytes = self.bytes;
        let rest = &bytes[self.i..];
        self.i += rest
            .iter()
            .position(|&b| !(b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80))
            .unwrap_or(rest.len());
        let word = &bytes[start..self.i];
        // A string prefix (`r"`, `b'`, `br#"`): the string is one operand.
        if matches!(self.peek(0), b'"' | b'\'' | b'#')
            && word.len() <= 3
            && self.string_prefix(word)
        {
            return Ok(());
        }
        let prefix_position = !self.after_operand;
        let (counted, operand) = if self.python {
            match word {
                b"not" | b"await" => (prefix_position, false),
                b"lambda" | b"and" | b"or" | b"in" | b"is" | b"if" | b"else" | b"yield" => {
                    (false, false)
                }
                _ => (false, true),
            }
        } else {
            match word {
                b"return" | b"break" | b"move" | b"box" => (true, false),
                b"self" | b"Self" | b"true" | b"false" | b"crate" | b"super" => (false, true),
                _ if is_rust_keyword(word) => (false, false),
                _ => (false, true),
            }
        };
        self.after_operand = operand;
        if counted {
            self.chain(start)?;
        } else if !operand {
            self.link(start)?;
        }
        Ok(())
    }

    fn string_prefix(&mut self, word: &[u8]) -> bool {
        let allowed: &[u8] = if self.python { b"rRbBuUfFtT" } else { b"rbc" };
        let ok = word.iter().all(|c| allowed.contains(c));
        if ok && self.peek(0) == b'#' && !self.python {
            return self.raw_string_rust();
        }
        if ok && self.peek(0) != b'#' {
            if !self.python && word.contains(&b'r') {
                return self.raw_string_rust();
            }
            self.string();
            return true;
        }
        false
    }

    fn operator(&mut self, start: usize) -> Result<(), usize> {
        let (b, next) = (self.peek(0), self.peek(1));
        let prefix_position = !self.after_operand;
        let (len, counted) = if self.python {
            match (b, next) {
                (b'*', b'*') => (2, true),
                (b'-' | b'+' | b'~', _) => (1, prefix_position),
                _ => (1, false),
            }
        } else {
            match (b, next) {
                (b'=', b'=' | b'>') | (b'!' | b'<' | b'>', b'=') => (2, false),
                (b'.', b'.') => (2, prefix_position),
                // `&&x` is two references, `|| ||` two closures.
                (b'&', b'&') | (b'|', b'|') if prefix_position => {
                    self.i += 1;
                    self.chain(start)?;
                    (1, true)
                }
                (b'&', b'&') | (b'|', b'|') => (2, false),
                (b'+' | b'-' | b'*' | b'/' | b'%' | b'^' | b'&' | b'|', b'=') => (2, true),
                (b'=', _) => (1, true),
                (b'-' | b'!' | b'&' | b'*' | b'|', _) => (1, prefix_position),
                _ => (1, false),
            }
        };
        self.i += len;
        self.after_operand = false;
        if counted {
            self.chain(start)?;
        } else {
            self.link(start)?;
        }
        Ok(())
    }

    /// A string from its opening quote: triple-quoted in Python, escapes skipped.
    fn string(&mut self) {
        let quote = self.peek(0);
        let triple = self.python && self.peek(1) == quote && self.peek(2) == quote;
        self.i += if triple { 3 } else { 1 };
        while self.i < self.bytes.len() {
            let b = self.peek(0);
            if b == b'\\' {
                self.i += 2;
            } else if b == quote && (!triple || (self.peek(1) == quote && self.peek(2) == quote)) {
                self.i += if triple { 3 } else { 1 };
                break;
            } else if b == b'\n' && self.python && !triple {
                break;
            } else {
                self.i += 1;
            }
        }
        self.after_operand = true;
    }

    /// `r#"…"#` in Rust: no escapes, closed by the quote and as many hashes.
    fn raw_string_rust(&mut self) -> bool {
        let mut hashes = 0;
        while self.peek(hashes) == b'#' {
            hashes += 1;
        }
        if self.peek(hashes) != b'"' {
            return false;
        }
        self.i += hashes + 1;
        while self.i < self.bytes.len() {
            if self.peek(0) == b'"' && (1..=hashes).all(|k| self.peek(k) == b'#') {
                self.i += 1 + hashes;
                break;
            }
            self.i += 1;
        }
        self.after_operand = true;
        true
    }

    /// `'a'`, `'\n'` are literals; `'a` is a lifetime.
    fn char_or_lifetime(&mut self) {
        let rest = &self.bytes[self.i + 1..];
        // Only the next character: decoding the whole rest would make each lifetime O(file).
        let char_len = rest[..rest.len().min(4)]
            .utf8_chunks()
            .next()
            .and_then(|c| c.valid().chars().next())
            .map_or(1, char::len_utf8);
        if rest.first() == Some(&b'\\') || rest.get(char_len) == Some(&b'\'') {
            self.i += 1;
            while self.i < self.bytes.len() {
                match self.peek(0) {
                    b'\\' => self.i += 2,
                    b'\'' => {
                        self.i += 1;
                        break;
                    }
                    b'\n' => break,
                    _ => self.i += 1,
                }
            }
        } else {
            self.i += 1;
        }
        self.after_operand = true;
    }

    fn skip_line(&mut self) {
        let rest = &self.bytes[self.i..];
        self.i += rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    }

    fn skip_block_comment(&mut self) {
        let mut level = 0usize;
        while self.i < self.bytes.len() {
            if self.peek(0) == b'/' && self.peek(1) == b'*' {
                level += 1;
                self.i += 2;
            } else if self.peek(0) == b'*' && self.peek(1) == b'/' {
                level -= 1;
                self.i += 2;
                if level == 0 {
                    break;
                }
            } else {
                self.i += 1;
            }
        }
    }

    /// At the start of a Python line outside brackets: open or close indented blocks.
    fn indent(&mut self) -> Result<(), usize> {
        let start = self.i;
        let mut width = 0;
        loop {
            match self.peek(0) {
                b' ' => width += 1,
                b'\t' => width = (width / 8 + 1) * 8,
                b'\x0c' => width = 0,
                _ => break,
            }
            self.i += 1;
        }
        if matches!(self.peek(0), b'\n' | b'\r' | b'#' | 0) {
            return Ok(());
        }
        while width < *self.indents.last().expect("never empty") && self.indents.len() > 1 {
            self.indents.pop();
        }
        if width > *self.indents.last().expect("never empty") {
            self.indents.push(width);
            self.guard(start)?;
        }
        Ok(())
    }
}

/// Rust's keywords besides those `word` sorts itself (a `match`: it runs on every word).
fn is_rust_keyword(word: &[u8]) -> bool {
    matches!(
        word,
        b"as"
            | b"async"
            | b"await"
            | b"const"
            | b"continue"
            | b"dyn"
            | b"else"
            | b"enum"
            | b"extern"
            | b"fn"
            | b"for"
            | b"if"
            | b"impl"
            | b"in"
            | b"let"
            | b"loop"
            | b"match"
            | b"mod"
            | b"mut"
            | b"pub"
            | b"ref"
            | b"static"
            | b"struct"
            | b"trait"
            | b"type"
            | b"unsafe"
            | b"use"
            | b"where"
            | b"while"
            | b"yield"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_error(language: Language, text: &str) -> Option<TooDeep> {
        check(language, text).err()
    }

    #[test]
    fn real_code_passes() {
        let py =
            "def f(a, b=-1):\n    x = {'a': [1, (2, 3)], \"(\": '['}\n    return not -a ** 2\n";
        assert_eq!(depth_error(Language::Python, py), None);
        let rs = "fn f<'a>(x: &'a [u8]) -> Vec<Vec<u8>> { let c = '('; let s = r#\"((\"#; a = b; }";
        assert_eq!(depth_error(Language::Rust, rs), None);
    }

    #[test]
    fn deep_inputs_are_refused_with_a_position() {
        let py = format!("x = {}1{}\n", "(".repeat(300), ")".repeat(300));
        let e = depth_error(Language::Python, &py).unwrap();
        assert_eq!((e.depth, e.line, e.column), (201, 1, 205));
        let unary = format!("x = {}1\n", "-".repeat(500));
        assert!(depth_error(Language::Python, &unary).is_some());
        let many = format!("x = [{}]\n", "-1, ".repeat(5000));
        assert_eq!(
            depth_error(Language::Python, &many),
            None,
            "commas reset chains"
        );
        let rs = format!("fn main() {{ let x = {}1; }}", "&".repeat(300));
        assert!(depth_error(Language::Rust, &rs).is_some());
        let binary = format!("fn main() {{ let x = 1{}; }}", " + 1".repeat(4000));
        assert_eq!(
            depth_error(Language::Rust, &binary),
            None,
            "binary chains loop"
        );
        // A generated file of many items (cudarc's 41,000-line `cupti` bindings): each item
        // ends with `}`, none with `;`, and no expression runs across two.
        let items = "#[repr(C)]\n#[derive(Debug, Copy, Clone)]\npub struct S {\n    pub a: *mut u8,\n}\nimpl S { fn f(&self) -> &u8 { &*self.a } }\n"
            .repeat(2000);
        assert_eq!(
            depth_error(Language::Rust, &items),
            None,
            "items start again"
        );
        // And so does each method of an `impl` of thousands (tch's generated `impl Tensor`).
        let methods = format!(
            "impl T {{\n{}}}\n",
            "    pub fn f(&self, o: &T) -> T {\n        self.g(o).unwrap()\n    }\n".repeat(3000)
        );
        assert_eq!(
            depth_error(Language::Rust, &methods),
            None,
            "methods start again"
        );
        // The same `}` inside one expression starts nothing again.
        let blocks = format!("const X: u8 = {{ 1 }}{};", " + {{ 1 }}".repeat(6000));
        assert!(depth_error(Language::Rust, &blocks).is_some());
        let long = format!("x = 1{}\n", " + 1".repeat(6000));
        assert!(
            depth_error(Language::Python, &long).is_some(),
            "but not forever"
        );
    }
}
