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
use spargebra::term::{GraphName, GraphNamePattern};
use spargebra::{GraphUpdateOperation, SparqlParser};

/// The deepest nesting of graph patterns, expressions and property paths an
/// update may have (an evaluator recurses once per level).
const MAX_DEPTH: usize = 100;
/// The parse runs on a thread of its own with this much stack, reserved, not
/// committed: a long chain of UNIONs or joins, which the parser builds in a
/// loop, is dropped recursively.
const PARSE_STACK: usize = 1 << 30;
const ALLOWED: &str = "only INSERT DATA, DELETE DATA, DELETE WHERE and DELETE/INSERT WHERE \
                       on the resource's own graph are allowed";

enum Refusal {
    Malformed(String),
    Refused(String),
}

fn refused(what: &str) -> Refusal {
    Refusal::Refused(format!("unsupported SPARQL Update: {what} ({ALLOWED})"))
}

fn check(text: &str, base_iri: &str) -> Result<String, Refusal> {
    let parser = SparqlParser::new()
        .with_base_iri(base_iri)
        .map_err(|e| Refusal::Malformed(format!("bad base IRI: {e}")))?;
    let update = parser
        .parse_update(text)
        .map_err(|e| Refusal::Malformed(e.to_string()))?;
    for operation in &update.operations {
        check_operation(operation)?;
    }
    Ok(update.to_string())
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
    while let Some((node, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(refused(&format!("nested deeper than {MAX_DEPTH} levels")));
        }
        let d = depth + 1;
        match node {
            Node::Pattern(pattern) => match pattern {
                GraphPattern::Bgp { .. } | GraphPattern::Values { .. } => {}
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
#[pyfunction]
fn check_update(py: Python<'_>, update: String, base_iri: String) -> PyResult<String> {
    let outcome = py.detach(move || {
        std::thread::Builder::new()
            .name("sparql-check".into())
            .stack_size(PARSE_STACK)
            .spawn(move || check(&update, &base_iri))
            .map(|thread| thread.join())
    });
    match outcome {
        Err(e) => Err(PyOSError::new_err(format!(
            "cannot start the SPARQL parser's thread: {e}"
        ))),
        Ok(Err(_)) => Err(PyValueError::new_err("the SPARQL parser failed")),
        Ok(Ok(Ok(text))) => Ok(text),
        Ok(Ok(Err(Refusal::Malformed(message)))) => Err(PySyntaxError::new_err(message)),
        Ok(Ok(Err(Refusal::Refused(message)))) => Err(PyValueError::new_err(message)),
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

/// From now on this process (all its threads, and any it starts) cannot
/// create a socket or an io_uring instance (EPERM), cannot gain privileges,
/// and is killed when the thread that started it ends.
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
    let filter = [
        statement(load, 4),
        jump(equal, AUDIT_ARCH, 1, 0),
        statement(ret, libc::SECCOMP_RET_KILL_PROCESS),
        statement(load, 0),
        // x86_64's x32 numbers (bit 30 set) are another table: none is needed.
        jump(at_least, 0x4000_0000, 3, 0),
        jump(equal, libc::SYS_socket as u32, 2, 0),
        jump(equal, libc::SYS_io_uring_setup as u32, 1, 0),
        statement(ret, libc::SECCOMP_RET_ALLOW),
        statement(ret, deny),
    ];
    let program = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
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
    module.add_function(wrap_pyfunction!(confine, module)?)?;
    module.add("MAX_DEPTH", MAX_DEPTH)?;
    Ok(())
}
