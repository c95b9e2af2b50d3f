//! tinygauge: a progress gauge widget that renders into a character [`Buffer`].

mod buffer;
mod gauge;

pub use buffer::{Buffer, Rect};
pub use gauge::Gauge;
