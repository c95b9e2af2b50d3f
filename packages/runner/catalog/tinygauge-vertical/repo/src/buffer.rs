//! A rectangular grid of cells that widgets draw into.

/// A rectangle in cell coordinates: `x`/`y` is the top-left corner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rect {
    pub x: u16,
    pub y: u16,
    pub width: u16,
    pub height: u16,
}

impl Rect {
    pub const fn new(x: u16, y: u16, width: u16, height: u16) -> Self {
        Self { x, y, width, height }
    }

    pub const fn area(&self) -> u32 {
        self.width as u32 * self.height as u32
    }

    pub const fn left(&self) -> u16 {
        self.x
    }

    pub const fn right(&self) -> u16 {
        self.x.saturating_add(self.width)
    }

    pub const fn top(&self) -> u16 {
        self.y
    }

    pub const fn bottom(&self) -> u16 {
        self.y.saturating_add(self.height)
    }

    /// The part of `self` that lies inside `other`.
    pub fn intersection(&self, other: Rect) -> Rect {
        let x1 = self.x.max(other.x);
        let y1 = self.y.max(other.y);
        let x2 = self.right().min(other.right());
        let y2 = self.bottom().min(other.bottom());
        if x2 <= x1 || y2 <= y1 {
            return Rect::new(x1, y1, 0, 0);
        }
        Rect::new(x1, y1, x2 - x1, y2 - y1)
    }
}

/// A grid of cells, one `char` each, covering `area`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffer {
    area: Rect,
    cells: Vec<char>,
}

impl Buffer {
    /// A buffer of spaces covering `area`.
    pub fn empty(area: Rect) -> Self {
        Self { area, cells: vec![' '; area.area() as usize] }
    }

    pub fn area(&self) -> Rect {
        self.area
    }

    fn index(&self, x: u16, y: u16) -> Option<usize> {
        let a = self.area;
        if x < a.left() || x >= a.right() || y < a.top() || y >= a.bottom() {
            return None;
        }
        Some((y - a.y) as usize * a.width as usize + (x - a.x) as usize)
    }

    /// The cell at absolute position (`x`, `y`), if it is inside the buffer.
    pub fn get(&self, x: u16, y: u16) -> Option<char> {
        self.index(x, y).map(|i| self.cells[i])
    }

    /// Sets one cell; positions outside the buffer are ignored.
    pub fn set(&mut self, x: u16, y: u16, c: char) {
        if let Some(i) = self.index(x, y) {
            self.cells[i] = c;
        }
    }

    /// Writes `s` starting at (`x`, `y`), clipped to the buffer's width.
    pub fn set_string(&mut self, x: u16, y: u16, s: &str) {
        for (i, c) in s.chars().enumerate() {
            let Ok(dx) = u16::try_from(i) else { break };
            let cx = x.saturating_add(dx);
            if cx >= self.area.right() {
                break;
            }
            self.set(cx, y, c);
        }
    }

    /// Row `y` (relative to the buffer's top) as a string.
    pub fn row(&self, y: u16) -> String {
        let w = self.area.width as usize;
        let start = y as usize * w;
        self.cells[start..start + w].iter().collect()
    }

    /// All rows, top to bottom.
    pub fn rows(&self) -> Vec<String> {
        (0..self.area.height).map(|y| self.row(y)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intersection_clips() {
        let a = Rect::new(0, 0, 10, 5);
        assert_eq!(a.intersection(Rect::new(5, 2, 10, 10)), Rect::new(5, 2, 5, 3));
        assert_eq!(a.intersection(Rect::new(20, 20, 1, 1)).area(), 0);
    }

    #[test]
    fn set_string_clips_to_width() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 4, 1));
        buf.set_string(2, 0, "abc");
        assert_eq!(buf.row(0), "  ab");
    }
}
