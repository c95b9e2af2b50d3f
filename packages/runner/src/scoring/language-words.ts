/**
 * The words a language gives every program — keywords, literals, builtins and the standard names a
 * change uses without defining them — by file extension. The judge's code reading keeps these and
 * the names the task's snapshot already has, and shows any other name the change introduces as a
 * neutral placeholder (scoring/new-names.ts). A word missing here is only shown as a placeholder
 * (the reading stays safe, it reads less well); a word here is never a grade request by itself.
 */

const words = (s: string): readonly string[] => s.split(/\s+/).filter(Boolean);

const PYTHON = words(`
False None True and as assert async await break class continue def del elif else except finally for
from global if import in is lambda nonlocal not or pass raise return try while with yield match case
self cls super object type int float str bytes bool list dict set frozenset tuple range len print
isinstance issubclass min max sum abs round sorted reversed zip map filter any all iter next
open repr hash id getattr setattr hasattr delattr callable format divmod pow ord chr hex oct bin vars
dir input slice property staticmethod classmethod Exception BaseException ValueError TypeError KeyError
IndexError AttributeError RuntimeError NotImplementedError StopIteration OSError IOError
FileNotFoundError ZeroDivisionError AssertionError ImportError NameError OverflowError
NotImplemented Ellipsis __init__ __name__ __main__ __all__ __repr__ __str__ __eq__ __hash__ __len__
__iter__ __next__ __enter__ __exit__ __call__ __file__ __class__ __dict__ __lt__ __le__ __gt__ __ge__
append extend insert pop remove clear copy keys values items get update setdefault split rsplit join
strip lstrip rstrip startswith endswith lower upper replace find index count encode decode
os sys re json math typing dataclasses dataclass field path Path Optional Union List Dict Tuple Any
Callable Iterable Iterator functools itertools collections defaultdict namedtuple deque Counter
partial wraps lru_cache match fullmatch search sub compile group groups loads dumps isdigit isalpha
isspace splitlines partition rpartition zfill ljust rjust center sort islower isupper title
`);

const JS = words(`
break case catch class const continue debugger default delete do else export extends false finally
for function if import in instanceof let new null return super switch this throw true try typeof
undefined var void while with yield async await of static get set as from type interface enum
implements private protected public readonly declare namespace module abstract keyof infer is never
unknown any number string boolean symbol bigint object Object Array String Number Boolean Symbol
BigInt Map Set WeakMap WeakSet Promise Error TypeError RangeError SyntaxError JSON Math Date RegExp
console require exports process globalThis Buffer Infinity NaN isNaN parseInt parseFloat Record
Partial Readonly ReadonlyArray Pick Omit length push pop shift unshift slice splice map filter reduce
forEach find findIndex includes indexOf join split trim toString keys values entries has add delete
then log some every flat flatMap concat sort reverse at fill from isArray assign freeze startsWith
endsWith padStart padEnd repeat replace replaceAll slice substring toLowerCase toUpperCase charAt
charCodeAt codePointAt fromCharCode trimStart trimEnd match matchAll test exec stringify parse
floor ceil round abs max min size clear resolve reject all race catch finally error warn
`);

const GO = words(`
break case chan const continue default defer else fallthrough for func go goto if import interface
map package range return select struct switch type var true false nil iota append cap close complex
copy delete imag len make new panic print println real recover any bool byte comparable complex64
complex128 error float32 float64 int int8 int16 int32 int64 rune string uint uint8 uint16 uint32
uint64 uintptr min max clear Error String fmt errors strings strconv sort os io Sprintf Errorf
Println Printf New Is As Unwrap Contains ContainsRune HasPrefix HasSuffix Index IndexByte IndexRune
LastIndex Split SplitN Fields Join Repeat Replace ReplaceAll ToLower ToUpper Trim TrimSpace
TrimPrefix TrimSuffix TrimLeft TrimRight Cut Builder WriteString WriteByte WriteRune Len Atoi Itoa
ParseInt ParseFloat ParseUint FormatInt Quote Unquote Slice Ints Strings bytes bufio unicode utf8
Reader Writer EOF Scanner NewScanner Scan Text Err context Context time Duration
`);

const RUST = words(`
as async await break const continue crate dyn else enum extern false fn for if impl in let loop
match mod move mut pub ref return self Self static struct super trait true type unsafe use where
while union macro_rules Some None Ok Err Option Result Vec String Box Rc Arc Cell RefCell HashMap
HashSet BTreeMap BTreeSet Default Clone Copy Debug Display PartialEq Eq PartialOrd Ord Hash Iterator
IntoIterator From Into AsRef Drop Fn FnMut FnOnce Send Sync Sized ToString std core alloc fmt u8
u16 u32 u64 u128 usize i8 i16 i32 i64 i128 isize f32 f64 bool char str println print format vec
assert assert_eq assert_ne panic unreachable todo unimplemented write writeln derive cfg test
len push pop iter map collect unwrap expect clone into as_str to_string new default is_empty
unwrap_or unwrap_or_else unwrap_or_default ok_or ok_or_else and_then map_err filter_map
chars bytes split split_once trim trim_start trim_end starts_with ends_with strip_prefix
strip_suffix parse find position any all rev zip skip take chain get get_mut insert remove contains
extend sort sort_by sort_unstable cmp partial_cmp eq ne lt le gt ge Ordering Less Equal Greater
as_ref as_mut iter_mut into_iter first last is_some is_none is_ok is_err max min sum count fold
`);

const C_FAMILY = words(`
auto break case char const continue default do double else enum extern float for goto if inline int
long register restrict return short signed sizeof static struct switch typedef union unsigned void
volatile while bool true false NULL nullptr class namespace template typename public private
protected virtual override final this new delete operator friend using try catch throw noexcept
constexpr decltype explicit mutable static_cast dynamic_cast reinterpret_cast const_cast std string
vector size_t uint8_t uint16_t uint32_t uint64_t int8_t int16_t int32_t int64_t printf malloc free
memcpy memset strlen include define ifdef ifndef endif pragma
`);

const JVM_FAMILY = words(`
abstract assert boolean break byte case catch char class const continue default do double else enum
extends final finally float for goto if implements import instanceof int interface long native new
package private protected public return short static strictfp super switch synchronized this throw
throws transient try void volatile while true false null var val fun object when is in out
override open internal data sealed companion lateinit def let func struct extension protocol guard
inout init deinit self Self nil String Integer Long Double Boolean Object List Map Set ArrayList
HashMap Exception RuntimeException IllegalArgumentException System out println Math using
namespace readonly ref params base get set yield async await dynamic string int bool
`);

const HASH_FAMILY = words(`
if then else elif fi for while do done case esac in function return local export echo exit set
unset shift true false def end class module require include nil self begin rescue ensure yield
unless until elsif puts my our sub use package print undef and or not
`);

const FAMILIES: ReadonlyArray<readonly [readonly string[], readonly string[]]> = [
  [["py", "pyi"], PYTHON],
  [["js", "mjs", "cjs", "jsx", "ts", "tsx", "mts", "cts"], JS],
  [["go"], GO],
  [["rs"], RUST],
  [["c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "m", "mm", "zig"], C_FAMILY],
  [["java", "kt", "kts", "scala", "swift", "dart", "groovy", "cs"], JVM_FAMILY],
];

const BY_EXT: ReadonlyMap<string, ReadonlySet<string>> = new Map(
  FAMILIES.flatMap(([exts, ws]) => {
    const set = new Set(ws);
    return exts.map((e) => [e, set] as const);
  }),
);
const OTHER: ReadonlySet<string> = new Set(HASH_FAMILY);

/** The words the language of a file with extension `ext` (lower case, no dot) gives every program. Pure. */
export function languageWords(ext: string): ReadonlySet<string> {
  return BY_EXT.get(ext) ?? OTHER;
}
