//! `lakebench._sparql`: what `lakebench serve` needs to run a client's SPARQL
//! Update without trusting it.
//!
//! * `check_update` parses an update with spargebra (the parser of
//!   pyoxigraph's own engine), decides on the parsed operations and patterns
//!   whether the server runs it, and returns the canonical text of that parse:
//!   what is evaluated is what was checked, not the client's text.
//! * `confine` closes the calling process's ways to the network (a seccomp
//!   filter: no socket, no io_uring) and ties its life to its parent's: the
//!   process that evaluates updates calls it before it reads one.
use pyo3::exceptions::{PyOSError, PySyntaxError, PyValueError};
use pyo3::prelude::*;
use spargebra::algebra::{
    AggregateExpression, Expression, GraphPattern, OrderExpression, PropertyPathExpression,
};
use oxrdf::vocab::xsd;
use oxrdf::{BlankNode, Literal, NamedOrBlankNode, Term, Triple};
use oxttl::NTriplesParser;
use pyo3::types::PyBytes;
use spargebra::term::{GraphName, GraphNamePattern, GroundTerm};
use spargebra::{GraphUpdateOperation, SparqlParser, Update};
use std::collections::{HashMap, HashSet};

/// The deepest nesting of graph patterns, expressions and property paths an
/// update may have (an evaluator recurses once per level).
const MAX_DEPTH: usize = 100;
/// The deepest nesting of brackets, and the longest run of prefix operators,
/// the text may have: the parser recurses once per level of either.
const MAX_NESTING: usize = 100;
/// The most triple patterns the WHERE clauses of an update may have (a
/// property path `p/q/...` is one per step): each is a join.
const MAX_PATTERNS: usize = 1000;
const ALLOWED: &str = "only INSERT DATA, DELETE DATA, DELETE WHERE and DELETE/INSERT WHERE \
                       on the resource's own graph are allowed";

enum Refusal {
    Malformed(String),
    Refused(String),
}

fn refused(what: &str) -> Refusal {
    Refusal::Refused(format!("unsupported SPARQL Update: {what} ({ALLOWED})"))
}

fn too_deep(what: &str) -> Refusal {
    Refusal::Refused(format!("SPARQL Update nested too deeply: {what}"))
}

/// Refuses text nested deeper than the parser may recurse, before it sees it:
/// brackets more than MAX_NESTING deep, or a run of more than MAX_NESTING
/// prefix operators (`!`, `-`, `+`).  One pass, no recursion.  Strings and
/// comments are skipped as SPARQL lexes them (a string's end is its first
/// unescaped closing quote or quotes); an IRI-shaped span's brackets are
/// counted as the parser would count them if the `<` were a less-than sign,
/// but never lower the depth.
fn check_nesting(text: &[u8]) -> Result<(), Refusal> {
    let n = text.len();
    let (mut i, mut depth, mut unary, mut reified) = (0usize, 0usize, 0usize, 0usize);
    let deeper = |depth: usize| {
        if depth > MAX_NESTING {
            Err(too_deep(&format!("brackets more than {MAX_NESTING} deep")))
        } else {
            Ok(())
        }
    };
    let longer = |run: usize| {
        if run > MAX_NESTING {
            Err(too_deep(&format!("more than {MAX_NESTING} prefix operators in a row")))
        } else {
            Ok(())
        }
    };
    while i < n {
        let c = text[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => i += 1,
            b'#' => {
                while i < n && text[i] != b'\n' && text[i] != b'\r' {
                    i += 1;
                }
            }
            b'!' | b'+' | b'-' => {
                unary += 1;
                longer(unary)?;
                i += 1;
            }
            b'\'' | b'"' => {
                unary = 0;
                let long = i + 2 < n && text[i + 1] == c && text[i + 2] == c;
                let mut j = if long { i + 3 } else { i + 1 };
                loop {
                    if j >= n || (!long && (text[j] == b'\n' || text[j] == b'\r')) {
                        return Err(Refusal::Malformed(format!(
                            "a string opened at byte {i} is not closed"
                        )));
                    }
                    if text[j] == b'\\' {
                        j += 2;
                    } else if text[j] == c
                        && (!long || (j + 2 < n && text[j + 1] == c && text[j + 2] == c))
                    {
                        i = j + if long { 3 } else { 1 };
                        break;
                    } else {
                        j += 1;
                    }
                }
            }
            b'<' if i + 1 < n && text[i + 1] == b'<' => {
                // `<<` opens a reified triple in SPARQL 1.2, which the parser
                // recurses into before refusing it: a level that never closes
                // (the second `<` may still start an IRI: `?a<<http://x>`).
                unary = 0;
                reified += 1;
                deeper(depth + reified)?;
                i += 1;
            }
            b'<' => {
                unary = 0;
                let mut j = i + 1;
                while j < n && !b"<>\"{}|^`\\".contains(&text[j]) && text[j] > 0x20 {
                    j += 1;
                }
                if j < n && text[j] == b'>' {
                    let (start, mut run) = (depth, 0usize);
                    for &b in &text[i + 1..j] {
                        match b {
                            b'(' | b'[' => {
                                depth += 1;
                                deeper(depth + reified)?;
                            }
                            b')' | b']' => depth = start.max(depth.saturating_sub(1)),
                            _ => {}
                        }
                        run = if matches!(b, b'!' | b'+' | b'-') { run + 1 } else { 0 };
                        longer(run)?;
                    }
                    i = j + 1;
                } else {
                    i += 1; // a less-than sign
                }
            }
            b'(' | b'{' | b'[' => {
                unary = 0;
                depth += 1;
                deeper(depth + reified)?;
                i += 1;
            }
            b')' | b'}' | b']' => {
                unary = 0;
                depth = depth.saturating_sub(1);
                i += 1;
            }
            _ => {
                unary = 0;
                i += 1;
            }
        }
    }
    Ok(())
}

fn parsed(text: &str, base_iri: &str) -> Result<Update, Refusal> {
    check_nesting(text.as_bytes())?;
    let parser = SparqlParser::new()
        .with_base_iri(base_iri)
        .map_err(|e| Refusal::Malformed(format!("bad base IRI: {e}")))?;
    let update = parser
        .parse_update(text)
        .map_err(|e| Refusal::Malformed(e.to_string()))?;
    for operation in &update.operations {
        check_operation(operation)?;
    }
    Ok(update)
}

fn check(text: &str, base_iri: &str) -> Result<String, Refusal> {
    Ok(parsed(text, base_iri)?.to_string())
}

/// The difference an update made only of INSERT DATA and DELETE DATA makes
/// to ``before``: (removed, added) N-Triples.  As the engine does: each
/// operation in turn on the set of triples, a blank node of an INSERT DATA a
/// fresh one (a DELETE DATA has none), a triple inserted twice or deleted
/// absent no change.
fn data_difference(update: &Update, before: &[u8]) -> Result<(Vec<u8>, Vec<u8>), String> {
    let old: HashSet<Triple> = NTriplesParser::new()
        .for_slice(before)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("the resource's N-Triples: {e}"))?;
    let mut now = old.clone();
    for operation in &update.operations {
        match operation {
            GraphUpdateOperation::DeleteData { data } => {
                for quad in data {
                    let object: Term = match &quad.object {
                        GroundTerm::NamedNode(n) => n.clone().into(),
                        GroundTerm::Literal(l) => l.clone().into(),
                    };
                    now.remove(&Triple::new(quad.subject.clone(), quad.predicate.clone(), object));
                }
            }
            GraphUpdateOperation::InsertData { data } => {
                let mut fresh: HashMap<BlankNode, BlankNode> = HashMap::new();
                let mut renamed = |node: &BlankNode| fresh.entry(node.clone()).or_default().clone();
                for quad in data {
                    let subject: NamedOrBlankNode = match &quad.subject {
                        NamedOrBlankNode::BlankNode(b) => renamed(b).into(),
                        other => other.clone(),
                    };
                    let object: Term = match &quad.object {
                        Term::BlankNode(b) => renamed(b).into(),
                        other => other.clone(),
                    };
                    now.insert(Triple::new(subject, quad.predicate.clone(), object));
                }
            }
            _ => unreachable!("data_difference takes INSERT DATA and DELETE DATA only"),
        }
    }
    let write = |triples: &mut dyn Iterator<Item = &Triple>| {
        let mut out = Vec::new();
        for triple in triples {
            out.extend_from_slice(format!("{triple} .\n").as_bytes());
        }
        out
    };
    Ok((write(&mut old.difference(&now)), write(&mut now.difference(&old))))
}

fn check_operation(operation: &GraphUpdateOperation) -> Result<(), Refusal> {
    let other_graph = || refused("another graph than the resource's own is named");
    match operation {
        GraphUpdateOperation::InsertData { data } => {
            if data.iter().any(|q| q.graph_name != GraphName::DefaultGraph) {
                return Err(other_graph());
            }
            Ok(())
        }
        GraphUpdateOperation::DeleteData { data } => {
            if data.iter().any(|q| q.graph_name != GraphName::DefaultGraph) {
                return Err(other_graph());
            }
            Ok(())
        }
        GraphUpdateOperation::DeleteInsert {
            delete,
            insert,
            using,
            pattern,
        } => {
            if using.is_some() {
                return Err(refused("USING or WITH is not allowed"));
            }
            if delete.iter().any(|q| q.graph_name != GraphNamePattern::DefaultGraph)
                || insert.iter().any(|q| q.graph_name != GraphNamePattern::DefaultGraph)
            {
                return Err(other_graph());
            }
            check_pattern(pattern)
        }
        GraphUpdateOperation::Load { .. } => Err(refused("LOAD is not allowed")),
        // ADD, MOVE and COPY are parsed into DROP and DELETE/INSERT on named graphs.
        GraphUpdateOperation::Clear { .. } => Err(refused("CLEAR is not allowed")),
        GraphUpdateOperation::Create { .. } => Err(refused("CREATE is not allowed")),
        GraphUpdateOperation::Drop { .. } => {
            Err(refused("DROP (or MOVE, COPY) is not allowed"))
        }
    }
}

enum Node<'a> {
    Pattern(&'a GraphPattern),
    Expr(&'a Expression),
    Path(&'a PropertyPathExpression),
}

/// Refuses SERVICE, GRAPH and nesting deeper than MAX_DEPTH, walking the
/// tree with a stack of its own (no recursion: depth is what is checked).
fn check_pattern(root: &GraphPattern) -> Result<(), Refusal> {
    let mut stack = vec![(Node::Pattern(root), 1usize)];
    let mut patterns = 0usize;
    while let Some((node, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(refused(&format!("nested deeper than {MAX_DEPTH} levels")));
        }
        let d = depth + 1;
        match node {
            Node::Pattern(pattern) => match pattern {
                GraphPattern::Bgp { patterns: bgp } => {
                    patterns += bgp.len();
                    if patterns > MAX_PATTERNS {
                        return Err(refused(&format!(
                            "more than {MAX_PATTERNS} triple patterns"
                        )));
                    }
                }
                GraphPattern::Values { .. } => {}
                GraphPattern::Path { path, .. } => stack.push((Node::Path(path), d)),
                GraphPattern::Join { left, right }
                | GraphPattern::Union { left, right }
                | GraphPattern::Minus { left, right } => {
                    stack.push((Node::Pattern(left), d));
                    stack.push((Node::Pattern(right), d));
                }
                GraphPattern::LeftJoin {
                    left,
                    right,
                    expression,
                } => {
                    stack.push((Node::Pattern(left), d));
                    stack.push((Node::Pattern(right), d));
                    if let Some(expression) = expression {
                        stack.push((Node::Expr(expression), d));
                    }
                }
                GraphPattern::Filter { expr, inner } => {
                    stack.push((Node::Expr(expr), d));
                    stack.push((Node::Pattern(inner), d));
                }
                GraphPattern::Extend {
                    inner, expression, ..
                } => {
                    stack.push((Node::Expr(expression), d));
                    stack.push((Node::Pattern(inner), d));
                }
                GraphPattern::OrderBy { inner, expression } => {
                    stack.push((Node::Pattern(inner), d));
                    for order in expression {
                        match order {
                            OrderExpression::Asc(e) | OrderExpression::Desc(e) => {
                                stack.push((Node::Expr(e), d))
                            }
                        }
                    }
                }
                GraphPattern::Project { inner, .. }
                | GraphPattern::Distinct { inner }
                | GraphPattern::Reduced { inner }
                | GraphPattern::Slice { inner, .. } => stack.push((Node::Pattern(inner), d)),
                GraphPattern::Group {
                    inner, aggregates, ..
                } => {
                    stack.push((Node::Pattern(inner), d));
                    for (_, aggregate) in aggregates {
                        if let AggregateExpression::FunctionCall { expr, .. } = aggregate {
                            stack.push((Node::Expr(expr), d));
                        }
                    }
                }
                GraphPattern::Graph { .. } => {
                    return Err(refused("GRAPH is not allowed"));
                }
                GraphPattern::Service { .. } => {
                    return Err(refused("SERVICE is not allowed"));
                }
            },
            Node::Expr(expression) => match expression {
                Expression::NamedNode(_)
                | Expression::Literal(_)
                | Expression::Variable(_)
                | Expression::Bound(_) => {}
                Expression::Or(a, b)
                | Expression::And(a, b)
                | Expression::Equal(a, b)
                | Expression::SameTerm(a, b)
                | Expression::Greater(a, b)
                | Expression::GreaterOrEqual(a, b)
                | Expression::Less(a, b)
                | Expression::LessOrEqual(a, b)
                | Expression::Add(a, b)
                | Expression::Subtract(a, b)
                | Expression::Multiply(a, b)
                | Expression::Divide(a, b) => {
                    stack.push((Node::Expr(a), d));
                    stack.push((Node::Expr(b), d));
                }
                Expression::In(a, list) => {
                    stack.push((Node::Expr(a), d));
                    stack.extend(list.iter().map(|e| (Node::Expr(e), d)));
                }
                Expression::UnaryPlus(a) | Expression::UnaryMinus(a) | Expression::Not(a) => {
                    stack.push((Node::Expr(a), d))
                }
                Expression::Exists(pattern) => stack.push((Node::Pattern(pattern), d)),
                Expression::If(a, b, c) => {
                    stack.push((Node::Expr(a), d));
                    stack.push((Node::Expr(b), d));
                    stack.push((Node::Expr(c), d));
                }
                Expression::Coalesce(list) | Expression::FunctionCall(_, list) => {
                    stack.extend(list.iter().map(|e| (Node::Expr(e), d)))
                }
            },
            Node::Path(path) => match path {
                PropertyPathExpression::NamedNode(_)
                | PropertyPathExpression::NegatedPropertySet(_) => {}
                PropertyPathExpression::Reverse(a)
                | PropertyPathExpression::ZeroOrMore(a)
                | PropertyPathExpression::OneOrMore(a)
                | PropertyPathExpression::ZeroOrOne(a) => stack.push((Node::Path(a), d)),
                PropertyPathExpression::Sequence(a, b)
                | PropertyPathExpression::Alternative(a, b) => {
                    stack.push((Node::Path(a), d));
                    stack.push((Node::Path(b), d));
                }
            },
        }
    }
    Ok(())
}

/// The canonical text of ``update`` (relative IRIs resolved against
/// ``base_iri``) if the server runs it; SyntaxError if it is not SPARQL
/// Update, ValueError (with the reason) if it is a form the server refuses.
///
/// The nesting is checked before the parser sees the text; a long chain of
/// UNIONs or joins, which the parser builds in a loop, is still dropped
/// recursively, so the caller runs this on a thread with a large stack (the
/// helper process of lakebench.server.sandbox does).
#[pyfunction]
fn check_update(py: Python<'_>, update: &str, base_iri: &str) -> PyResult<String> {
    match py.detach(|| check(update, base_iri)) {
        Ok(text) => Ok(text),
        Err(Refusal::Malformed(message)) => Err(PySyntaxError::new_err(message)),
        Err(Refusal::Refused(message)) => Err(PyValueError::new_err(message)),
    }
}

/// Whether the engine stores ``literal`` as it is written: a simple or
/// language-tagged one.  A typed one may be stored in its canonical form
/// (``01`` as the integer ``1``), so an update holding one goes to the engine.
fn kept_as_written(literal: &Literal) -> bool {
    literal.language().is_some() || literal.datatype() == xsd::STRING
}

/// What the helper runs: ``(removed, added)`` N-Triples for an update made
/// only of INSERT DATA and DELETE DATA whose literals are simple or
/// language-tagged (see kept_as_written), computed here on ``before`` (the
/// resource's N-Triples) from the checked parse; for any other update it
/// accepts, its canonical text (as :func:`check_update`), for the engine.
/// Raises as check_update does; run it on a thread with a large stack.
#[pyfunction]
fn prepare_update(
    py: Python<'_>,
    update: &str,
    base_iri: &str,
    before: &[u8],
) -> PyResult<Py<PyAny>> {
    enum Prepared {
        Difference(Vec<u8>, Vec<u8>),
        Text(String),
    }
    let prepared = py.detach(|| -> Result<Result<Prepared, String>, Refusal> {
        let parsed = parsed(update, base_iri)?;
        let data_only = parsed.operations.iter().all(|op| match op {
            GraphUpdateOperation::InsertData { data } => data.iter().all(|q| match &q.object {
                Term::Literal(l) => kept_as_written(l),
                _ => true,
            }),
            GraphUpdateOperation::DeleteData { data } => data.iter().all(|q| match &q.object {
                GroundTerm::Literal(l) => kept_as_written(l),
                _ => true,
            }),
            _ => false,
        });
        if !data_only {
            return Ok(Ok(Prepared::Text(parsed.to_string())));
        }
        Ok(data_difference(&parsed, before).map(|(r, a)| Prepared::Difference(r, a)))
    });
    match prepared {
        Ok(Ok(Prepared::Difference(removed, added))) => Ok((
            PyBytes::new(py, &removed),
            PyBytes::new(py, &added),
        )
            .into_pyobject(py)?
            .into_any()
            .unbind()),
        Ok(Ok(Prepared::Text(text))) => Ok(text.into_pyobject(py)?.into_any().unbind()),
        Ok(Err(message)) => Err(PyOSError::new_err(message)),
        Err(Refusal::Malformed(message)) => Err(PySyntaxError::new_err(message)),
        Err(Refusal::Refused(message)) => Err(PyValueError::new_err(message)),
    }
}

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

fn statement(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter { code, jt: 0, jf: 0, k }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The system calls the helper may not make: a socket or an io_uring
/// instance (a way out to the network), or a reach into another process (its
/// parent's sockets through ptrace, /proc/PID/mem or pidfd_getfd).
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const DENIED: [libc::c_long; 8] = [
    libc::SYS_socket,
    libc::SYS_io_uring_setup,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_open,
    libc::SYS_pidfd_getfd,
    libc::SYS_kcmp,
];

/// From now on this process (all its threads, and any it starts) cannot
/// make the DENIED calls (EPERM), cannot gain privileges, and is killed when
/// the thread that started it ends.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[pyfunction]
fn confine() -> PyResult<()> {
    use libc::{BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};
    let load = (BPF_LD | BPF_W | BPF_ABS) as u16;
    let equal = (BPF_JMP | BPF_JEQ | BPF_K) as u16;
    let at_least = (BPF_JMP | BPF_JGE | BPF_K) as u16;
    let ret = (BPF_RET | BPF_K) as u16;
    let deny = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    // struct seccomp_data: the syscall number at offset 0, the architecture at 4.
    let mut filter = vec![
        statement(load, 4),
        jump(equal, AUDIT_ARCH, 1, 0),
        statement(ret, libc::SECCOMP_RET_KILL_PROCESS),
        statement(load, 0),
        // x86_64's x32 numbers (bit 30 set) are another table: none is needed.
        jump(at_least, 0x4000_0000, DENIED.len() as u8 + 1, 0),
    ];
    // Each denied call jumps over the ones after it and the ALLOW to the deny.
    for (k, call) in DENIED.iter().enumerate() {
        filter.push(jump(equal, *call as u32, (DENIED.len() - k) as u8, 0));
    }
    filter.push(statement(ret, libc::SECCOMP_RET_ALLOW));
    filter.push(statement(ret, deny));
    let program = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    let fail = |what: &str| {
        PyOSError::new_err(format!(
            "{what}: {}",
            std::io::Error::last_os_error()
        ))
    };
    // SAFETY: plain system calls; `program` outlives the seccomp call, which copies it.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
            return Err(fail("prctl(PR_SET_PDEATHSIG)"));
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) != 0 {
            return Err(fail("prctl(PR_SET_NO_NEW_PRIVS)"));
        }
        if libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_TSYNC,
            &program as *const libc::sock_fprog,
        ) != 0
        {
            return Err(fail("seccomp"));
        }
    }
    Ok(())
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[pyfunction]
fn confine() -> PyResult<()> {
    Err(PyOSError::new_err(
        "no network sandbox for this architecture (x86_64 and aarch64 have one)",
    ))
}

#[pymodule]
fn _sparql(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(check_update, module)?)?;
    module.add_function(wrap_pyfunction!(prepare_update, module)?)?;
    module.add_function(wrap_pyfunction!(confine, module)?)?;
    module.add("MAX_DEPTH", MAX_DEPTH)?;
    module.add("MAX_NESTING", MAX_NESTING)?;
    module.add("MAX_PATTERNS", MAX_PATTERNS)?;
    Ok(())
}
