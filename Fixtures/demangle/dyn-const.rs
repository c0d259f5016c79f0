// A `dyn Trait` with a const binding (`dyn Trait<N = 0>`) as a generic argument, for Rust v0
// names that carry `p <name> K <const>` (see generate.sh; needs RUSTC_BOOTSTRAP=1).
#![feature(min_generic_const_args)]
#![allow(incomplete_features)]
pub trait Trait { type const N: usize; fn get(&self) -> usize; }
pub struct S;
impl Trait for S { type const N: usize = 0; fn get(&self) -> usize { 7 } }
#[inline(never)]
pub fn call(x: &dyn Trait<N = 0>) -> usize { x.get() }
fn main() { std::process::exit((call(&S) + use_named()) as i32); }
#[inline(never)]
pub fn named<T: ?Sized>() -> usize { std::mem::size_of::<&T>() }
pub fn use_named() -> usize { named::<dyn Trait<N = 0>>() }
