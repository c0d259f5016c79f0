// Rust with panic=abort: an index out of bounds two calls deep; the panic machinery aborts
// (SIGABRT from core::panicking through std's abort into libc).
#[inline(never)]
fn pick(values: &[u32], index: usize) -> u32 {
    values[index] * 2
}

#[inline(never)]
fn compute(count: usize) -> u32 {
    let values: Vec<u32> = (0..3).collect();
    pick(&values, count + 7)
}

fn main() {
    let count = std::env::args().count();
    println!("{}", compute(count));
}
