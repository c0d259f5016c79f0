// Rust program whose symbols exercise the legacy and v0 manglings (see generate.sh).
use std::collections::HashMap;
use std::fmt;

pub mod geometry {
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct Point<T> {
        pub x: T,
        pub y: T,
    }

    impl<T: std::ops::Add<Output = T> + Copy> Point<T> {
        #[inline(never)]
        pub fn sum(&self) -> T {
            self.x + self.y
        }
    }

    pub mod nested {
        pub trait Shape {
            fn area(&self) -> f64;
            fn describe(&self) -> String {
                format!("area {}", self.area())
            }
        }

        pub struct Square(pub f64);
        impl Shape for Square {
            #[inline(never)]
            fn area(&self) -> f64 {
                self.0 * self.0
            }
        }
    }
}

use geometry::nested::Shape;
use geometry::Point;

pub struct Matrix<const R: usize, const C: usize>([[i32; C]; R]);

impl<const R: usize, const C: usize> Matrix<R, C> {
    #[inline(never)]
    pub fn trace(&self) -> i32 {
        (0..R.min(C)).map(|i| self.0[i][i]).sum()
    }
}

#[inline(never)]
pub fn signed_const<const N: i32>() -> i32 {
    N * 2
}

#[inline(never)]
pub fn bool_const<const B: bool>() -> bool {
    !B
}

#[inline(never)]
pub fn char_const<const C: char>() -> u32 {
    C as u32
}

#[inline(never)]
pub fn wide_const<const W: u128>() -> u128 {
    W / 3
}

#[inline(never)]
pub fn generic_identity<T: fmt::Debug>(value: T) -> String {
    format!("{:?}", value)
}

#[inline(never)]
pub fn takes_fn_pointer(f: fn(u8) -> u8, g: unsafe extern "C" fn(*const u8, *mut i64), h: for<'a> fn(&'a str) -> &'a str) -> u8 {
    let _ = (g, h);
    f(3)
}

extern "C" fn c_callback(_p: *const u8, _q: *mut i64) {}
fn add_one(x: u8) -> u8 {
    x + 1
}
fn first_word(s: &str) -> &str {
    s.split(' ').next().unwrap_or("")
}

#[inline(never)]
pub fn dyn_things(a: &dyn Fn(u8) -> u8, b: Box<dyn Iterator<Item = u32> + Send>, c: &mut dyn fmt::Write) -> u32 {
    let _ = c.write_str("x");
    a(1) as u32 + b.sum::<u32>()
}

pub struct Ñandú {
    pub plumas: u32,
}

impl Ñandú {
    #[inline(never)]
    pub fn grüße(&self) -> u32 {
        self.plumas + 1
    }
}

pub mod 日本 {
    #[inline(never)]
    pub fn こんにちは(n: u32) -> u32 {
        n.wrapping_mul(31)
    }
}

impl fmt::Display for Ñandú {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ñandú({})", self.plumas)
    }
}

pub trait Visitor {
    fn visit(&mut self, item: &[u8]) -> usize;
}

impl<T: Visitor + ?Sized> Visitor for &mut T {
    #[inline(never)]
    fn visit(&mut self, item: &[u8]) -> usize {
        (**self).visit(item) + 1
    }
}

impl Visitor for [u16] {
    #[inline(never)]
    fn visit(&mut self, item: &[u8]) -> usize {
        self.len() + item.len()
    }
}

impl Visitor for (u8, i64) {
    #[inline(never)]
    fn visit(&mut self, item: &[u8]) -> usize {
        item.len() + self.0 as usize
    }
}

impl Visitor for [u8; 4] {
    #[inline(never)]
    fn visit(&mut self, item: &[u8]) -> usize {
        item.len() + 4
    }
}

impl Visitor for *const u8 {
    #[inline(never)]
    fn visit(&mut self, item: &[u8]) -> usize {
        item.len() + 8
    }
}

impl Visitor for extern "C" fn(*const u8, *mut i64) {
    #[inline(never)]
    fn visit(&mut self, item: &[u8]) -> usize {
        item.len() + 16
    }
}

#[inline(never)]
pub fn with_closures(values: &[i64]) -> i64 {
    let scale = 3;
    let outer = |v: &i64| {
        let inner = |w: i64| w * scale;
        inner(*v) + 1
    };
    let second = move |v: i64| v - scale;
    values.iter().map(outer).map(second).sum()
}

#[inline(never)]
pub fn never_returns(code: i32) -> ! {
    std::process::exit(code)
}

#[inline(never)]
pub fn tuple_generic<A: fmt::Debug, B: fmt::Debug>(pair: (A, B), single: (A,)) -> String
where
    A: Clone,
{
    format!("{:?} {:?}", pair, single)
}

#[inline(never)]
pub fn lifetimes<'a, 'b: 'a>(x: &'a str, _y: &'b mut Vec<&'a str>) -> &'a str {
    x
}

pub async fn async_answer(x: u32) -> u32 {
    x + 42
}

static mut COUNTER: u64 = 0;

fn main() {
    let p = Point { x: 1i32, y: 2 };
    let q = Point { x: 1.5f64, y: 2.5 };
    let sq = geometry::nested::Square(2.0);
    let m = Matrix::<2, 3>([[1, 2, 3], [4, 5, 6]]);
    let nandu = Ñandú { plumas: 7 };
    let mut map: HashMap<String, Vec<Point<i32>>> = HashMap::new();
    map.entry("a".to_string()).or_default().push(p);
    let mut s = String::new();
    let mut total = p.sum() as i64 + q.sum() as i64 + sq.area() as i64 + sq.describe().len() as i64;
    total += m.trace() as i64 + signed_const::<-7>() as i64 + bool_const::<true>() as i64;
    total += char_const::<'ß'>() as i64 + char_const::<'\''>() as i64 + wide_const::<0x1234_5678_9abc_def0_1122_3344_5566_7788>() as i64;
    total += generic_identity(Some(&[1u8, 2][..])).len() as i64 + generic_identity(map.len()).len() as i64;
    total += takes_fn_pointer(add_one, c_callback, first_word) as i64;
    total += dyn_things(&|x| x * 2, Box::new(vec![1u32, 2].into_iter()), &mut s) as i64;
    total += nandu.grüße() as i64 + 日本::こんにちは(3) as i64 + format!("{}", nandu).len() as i64;
    let mut arr = [1u8, 2, 3, 4];
    let mut tup = (1u8, 2i64);
    let mut ptr: *const u8 = arr.as_ptr();
    let mut cb: extern "C" fn(*const u8, *mut i64) = c_callback;
    let mut wide = vec![1u16, 2];
    total += (&mut arr).visit(b"ab") as i64 + (&mut tup).visit(b"c") as i64 + ptr.visit(b"") as i64;
    total += cb.visit(b"x") as i64 + wide[..].visit(b"yz") as i64 + nandu.plumas as i64;
    total += with_closures(&[1, 2, 3]);
    total += tuple_generic((1u8, "two"), (3u8,)).len() as i64;
    let mut words = Vec::new();
    total += lifetimes("hello", &mut words).len() as i64;
    let fut = async_answer(1);
    std::mem::drop(fut);
    unsafe {
        COUNTER += total as u64;
        if COUNTER == 12345 {
            never_returns(3);
        }
    }
    println!("{}", total);
}
