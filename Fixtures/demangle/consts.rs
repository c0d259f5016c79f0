// Const generics of every kind the v0 mangling can encode (needs nightly features, see generate.sh).
#![feature(adt_const_params, unsized_const_params)]
#![allow(incomplete_features)]

use std::marker::ConstParamTy;

#[derive(PartialEq, Eq, ConstParamTy)]
pub struct Config {
    pub level: u8,
    pub signed: i16,
    pub enabled: bool,
}

#[derive(PartialEq, Eq, ConstParamTy)]
pub enum Mode {
    Off,
    Fixed(u32),
    Range { low: i8, high: i8 },
}

#[derive(PartialEq, Eq, ConstParamTy)]
pub struct Unit;

#[inline(never)]
pub fn by_str<const S: &'static str>() -> usize {
    S.len()
}

#[inline(never)]
pub fn by_struct<const C: Config>() -> u8 {
    C.level
}

#[inline(never)]
pub fn by_enum<const M: Mode>() -> u32 {
    match M {
        Mode::Off => 0,
        Mode::Fixed(n) => n,
        Mode::Range { low, high } => (high - low) as u32,
    }
}

#[inline(never)]
pub fn by_unit<const U: Unit>() -> u8 {
    1
}

#[inline(never)]
pub fn by_array<const A: [u16; 3]>() -> u16 {
    A[0] + A[1] + A[2]
}

#[inline(never)]
pub fn by_tuple<const T: (u8, char, bool)>() -> u32 {
    T.0 as u32 + T.1 as u32
}

#[inline(never)]
pub fn by_ref<const R: &'static [u8]>() -> usize {
    R.len()
}

#[inline(never)]
pub fn by_single<const T: (i32,)>() -> i32 {
    T.0
}

fn main() {
    let mut total = 0usize;
    total += by_str::<"hello \"world\" \n tab\t é ✓">();
    total += by_str::<"it's">();
    total += by_struct::<{ Config { level: 3, signed: -4, enabled: true } }>() as usize;
    total += by_enum::<{ Mode::Off }>() as usize;
    total += by_enum::<{ Mode::Fixed(9) }>() as usize;
    total += by_enum::<{ Mode::Range { low: -2, high: 5 } }>() as usize;
    total += by_unit::<{ Unit }>() as usize;
    total += by_array::<{ [1, 2, 3] }>() as usize;
    total += by_tuple::<{ (7, 'x', false) }>() as usize;
    total += by_ref::<{ &[1, 2] }>();
    total += by_single::<{ (5,) }>() as usize;
    println!("{}", total);
}
