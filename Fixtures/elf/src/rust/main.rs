//! Rust fixture: traits with generic and dynamic dispatch, closures, iterator chains (inlined
//! through core/alloc at opt-level=2), a module, `#[inline(always)]` helpers and a
//! `#[inline(never)]` boundary. `prog crash` reads through a null pointer inside an inlined
//! helper, so the fixture can also produce real crash reports.

mod geometry {
    pub trait Shape {
        fn area(&self) -> f64;
        fn name(&self) -> &'static str;
    }

    #[derive(Clone, Copy, Debug)]
    pub struct Circle {
        pub radius: f64,
    }

    #[derive(Clone, Copy, Debug)]
    pub struct Rectangle {
        pub width: f64,
        pub height: f64,
    }

    #[inline(always)]
    pub fn square(value: f64) -> f64 {
        value * value
    }

    impl Shape for Circle {
        #[inline]
        fn area(&self) -> f64 {
            std::f64::consts::PI * square(self.radius)
        }
        fn name(&self) -> &'static str {
            "circle"
        }
    }

    impl Shape for Rectangle {
        fn area(&self) -> f64 {
            self.width * self.height
        }
        fn name(&self) -> &'static str {
            "rectangle"
        }
    }

    /// Generic: monomorphised per shape type, with `keep` and `area` inlined into the loop.
    pub fn total_area<S: Shape, F: Fn(&S) -> bool>(shapes: &[S], keep: F) -> f64 {
        shapes.iter().filter(|s| keep(s)).map(|s| s.area()).sum()
    }

    /// Dynamic dispatch: not inlined.
    #[inline(never)]
    pub fn describe(shapes: &[Box<dyn Shape>]) -> String {
        let names: Vec<&str> = shapes.iter().map(|s| s.name()).collect();
        names.join(",")
    }
}

use geometry::{Circle, Rectangle, Shape};

#[inline(always)]
fn read_slot(slot: *const u64) -> u64 {
    // The crash line: slot is null in crash mode.
    unsafe { std::ptr::read_volatile(slot) + 1 }
}

#[inline(never)]
fn crash_through(slot: *const u64, seed: u64) -> u64 {
    (0..seed).map(|i| read_slot(slot) ^ i).fold(0, |acc, x| acc.wrapping_add(x))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let lengths: Vec<f64> = args.iter().skip(1).map(|a| a.len() as f64).collect();

    let circles: Vec<Circle> = lengths.iter().map(|&radius| Circle { radius }).collect();
    let rectangles: Vec<Rectangle> = lengths
        .iter()
        .enumerate()
        .map(|(i, &width)| Rectangle { width, height: (i + 1) as f64 })
        .collect();

    let threshold = args.len() as f64 / 4.0;
    let big = geometry::total_area(&circles, |c| c.radius > threshold);
    let wide = geometry::total_area(&rectangles, |r| r.width >= r.height);

    let mut boxed: Vec<Box<dyn Shape>> = Vec::new();
    for (circle, rectangle) in circles.iter().zip(rectangles.iter()) {
        boxed.push(Box::new(*circle));
        boxed.push(Box::new(*rectangle));
    }

    if args.get(1).map(String::as_str) == Some("crash") {
        let slot = std::hint::black_box(std::ptr::null::<u64>());
        println!("{}", crash_through(slot, args.len() as u64));
    }

    println!("{} {} {}", big as i64, wide as i64, geometry::describe(&boxed));
}
