//! A gauge that shows a ratio as a filled bar, with an optional label.

use crate::buffer::{Buffer, Rect};

/// Eighths of a cell, for sub-cell precision at the edge of the filled part.
const HORIZONTAL_EIGHTHS: [char; 9] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉', '█'];

/// A progress gauge. The filled part grows from the left edge of the area to the right.
///
/// ```
/// use tinygauge::{Buffer, Gauge, Rect};
/// let area = Rect::new(0, 0, 4, 1);
/// let mut buf = Buffer::empty(area);
/// Gauge::default().ratio(0.5).render(area, &mut buf);
/// assert_eq!(buf.row(0), "██  ");
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Gauge {
    ratio: f64,
    label: Option<String>,
    use_unicode: bool,
}

impl Gauge {
    /// Sets the filled fraction; values outside `0.0..=1.0` are clamped.
    pub fn ratio(mut self, ratio: f64) -> Self {
        self.ratio = if ratio.is_nan() { 0.0 } else { ratio.clamp(0.0, 1.0) };
        self
    }

    /// Sets the filled fraction from a percentage (`0..=100`, clamped).
    pub fn percent(self, percent: u16) -> Self {
        self.ratio(f64::from(percent.min(100)) / 100.0)
    }

    /// A label drawn centred over the gauge.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Draw the edge of the filled part with eighth-of-a-cell block characters.
    pub fn use_unicode(mut self, yes: bool) -> Self {
        self.use_unicode = yes;
        self
    }

    pub fn get_ratio(&self) -> f64 {
        self.ratio
    }

    /// Renders into `buf`, clipped to `area`.
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        let area = area.intersection(buf.area());
        if area.area() == 0 {
            return;
        }
        let filled = f64::from(area.width) * self.ratio;
        let full = filled.floor() as u16;
        let eighths = if self.use_unicode { ((filled - f64::from(full)) * 8.0).round() as usize } else { 0 };
        for y in area.top()..area.bottom() {
            for x in area.left()..area.right() {
                let dx = x - area.left();
                let c = if dx < full {
                    '█'
                } else if dx == full && eighths > 0 {
                    HORIZONTAL_EIGHTHS[eighths]
                } else {
                    ' '
                };
                buf.set(x, y, c);
            }
        }
        if let Some(label) = &self.label {
            let len = label.chars().count() as u16;
            let x = area.left() + area.width.saturating_sub(len) / 2;
            let y = area.top() + area.height.saturating_sub(1) / 2;
            buf.set_string(x, y, label);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(gauge: Gauge, width: u16, height: u16) -> Vec<String> {
        let area = Rect::new(0, 0, width, height);
        let mut buf = Buffer::empty(area);
        gauge.render(area, &mut buf);
        buf.rows()
    }

    #[test]
    fn half_filled() {
        assert_eq!(render(Gauge::default().ratio(0.5), 10, 1), vec!["█████     "]);
    }

    #[test]
    fn ratio_is_clamped() {
        assert_eq!(Gauge::default().ratio(1.7).get_ratio(), 1.0);
        assert_eq!(Gauge::default().ratio(-3.0).get_ratio(), 0.0);
        assert_eq!(Gauge::default().ratio(f64::NAN).get_ratio(), 0.0);
    }

    #[test]
    fn percent_sets_ratio() {
        assert_eq!(render(Gauge::default().percent(30), 10, 2), vec!["███       ", "███       "]);
    }

    #[test]
    fn unicode_edge() {
        assert_eq!(render(Gauge::default().ratio(0.25).use_unicode(true), 3, 1), vec!["▊  "]);
    }

    #[test]
    fn label_is_centred() {
        assert_eq!(render(Gauge::default().ratio(0.2).label("20%"), 9, 3), vec!["█        ", "█  20%   ", "█        "]);
    }

    #[test]
    fn render_clips_to_buffer() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 4, 1));
        Gauge::default().ratio(1.0).render(Rect::new(2, 0, 10, 1), &mut buf);
        assert_eq!(buf.row(0), "  ██");
    }
}
