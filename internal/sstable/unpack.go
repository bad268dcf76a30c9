package sstable

import "errors"

// unpackWindow is how far back a copy of a streamed block may reach: LZ4's offsets are 16
// bits, and snappy's compressors cut their input into 64 KiB fragments, so real blocks never
// reach further (a snappy block that does is read whole instead).
const unpackWindow = 64 << 10

var (
	errUnpackWindow = errors.New("a copy reaches back past 64 KiB")
	errUnpack       = errors.New("corrupt compressed data")
)

// unpacker decodes a compressed block (lz4 or snappy: the raw block formats of RocksDB's
// blocks) as a stream, its compressed bytes read from the table a chunk at a time and its
// output held only as far back as a copy reaches: a compressed index of any size is walked in
// a few hundred KiB. Reads are forward only.
type unpacker struct {
	t    *Table
	typ  Compression
	off  int64        // file offset of the compressed bytes not read yet
	left int          // compressed bytes not read yet
	in   []byte       // the chunk read last; in[ip:] not decoded yet
	ip   int          //
	hash func([]byte) // sees every compressed byte read, or nil
	out  []byte       // decoded: out[rd:] not read yet, out[:rd] the window
	rd   int          //
	size int          // the block's decoded size
	done int          // bytes decoded
	// The operation under way: literal bytes to copy from the input, or a match of mlen bytes
	// moff back; lz4More: an lz4 sequence's offset and match follow its literals unless the
	// block ends there, with mnib the token's match length.
	lit, mlen, moff int
	lz4More         bool
	mnib            int
	end             bool // the block's last operation is done
}

// newUnpacker starts decoding the compressed block at h (its stored bytes: the decoded size
// first, lz4's varint32 prefix or snappy's own), feeding every byte read to hash when not nil.
func (t *Table) newUnpacker(h Handle, typ Compression, hash func([]byte)) (*unpacker, error) {
	u := &unpacker{t: t, typ: typ, off: int64(h.Offset), left: int(h.Size), hash: hash}
	var v uint64
	for i := 0; ; i++ {
		c, err := u.byte()
		if err != nil || i == 5 {
			return nil, errUnpack
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			break
		}
	}
	// The bounds block() and the snappy codec put on a claimed size: a damaged one must not
	// make the window pass read gigabytes of nothing.
	limit := max(1<<20, 256*h.Size)
	if typ == SnappyCompression {
		limit = 64*h.Size + 64
	}
	// (No block read as a stream is empty: codecs disagree on what an empty one is.)
	if v == 0 || v > limit || v > 1<<31 {
		return nil, errUnpack
	}
	u.size = int(v)
	u.out = make([]byte, 0, 2*unpackWindow)
	return u, nil
}

// refill reads the next chunk of compressed bytes.
func (u *unpacker) refill() error {
	if u.left == 0 {
		return errUnpack
	}
	n := min(u.left, max(indexChunk, 1))
	b, err := u.t.readAt(u.off, n, &u.in)
	if err != nil {
		return err
	}
	if u.hash != nil {
		u.hash(b)
	}
	u.in, u.ip = b, 0
	u.off += int64(n)
	u.left -= n
	return nil
}

// exhausted is whether every compressed byte has been decoded.
func (u *unpacker) exhausted() bool { return u.ip == len(u.in) && u.left == 0 }

func (u *unpacker) byte() (byte, error) {
	if u.ip == len(u.in) {
		if err := u.refill(); err != nil {
			return 0, err
		}
	}
	c := u.in[u.ip]
	u.ip++
	return c, nil
}

// le reads an n-byte little-endian number.
func (u *unpacker) le(n int) (int, error) {
	v := 0
	for i := 0; i < n; i++ {
		c, err := u.byte()
		if err != nil {
			return 0, err
		}
		v |= int(c) << (8 * i)
	}
	return v, nil
}

// lz4Len adds lz4's length extension bytes (255 each until a smaller one) to n.
func (u *unpacker) lz4Len(n int) (int, error) {
	for {
		c, err := u.byte()
		if err != nil {
			return 0, err
		}
		n += int(c)
		if n > u.size {
			return 0, errUnpack
		}
		if c != 255 {
			return n, nil
		}
	}
}

// op parses the next operation into lit or mlen and moff; at the block's end it sets end.
func (u *unpacker) op() error {
	if u.typ != SnappyCompression && u.lz4More {
		u.lz4More = false
		if u.exhausted() {
			// An lz4 block ends with a sequence of literals only, whose token has no match
			// length: the whole-block decoder (statefmt's) refuses one that has, and a block
			// must read the same streamed or whole.
			if u.done != u.size || u.mnib != 0 {
				return errUnpack
			}
			u.end = true
			return nil
		}
		off, err := u.le(2)
		if err != nil {
			return err
		}
		ml := u.mnib
		if ml == 15 {
			if ml, err = u.lz4Len(ml); err != nil {
				return err
			}
		}
		return u.match(off, ml+4)
	}
	if u.exhausted() {
		if u.typ == SnappyCompression && u.done == u.size {
			u.end = true
			return nil
		}
		return errUnpack
	}
	tag, err := u.byte()
	if err != nil {
		return err
	}
	if u.typ != SnappyCompression {
		l := int(tag >> 4)
		if l == 15 {
			if l, err = u.lz4Len(l); err != nil {
				return err
			}
		}
		u.mnib, u.lz4More = int(tag&15), true
		return u.literal(l)
	}
	switch tag & 3 {
	case 0:
		l := int(tag >> 2)
		if l >= 60 {
			if l, err = u.le(l - 59); err != nil {
				return err
			}
		}
		return u.literal(l + 1)
	case 1:
		c, err := u.byte()
		if err != nil {
			return err
		}
		return u.match(int(tag>>5)<<8|int(c), 4+int(tag>>2&7))
	case 2:
		off, err := u.le(2)
		if err != nil {
			return err
		}
		return u.match(off, 1+int(tag>>2))
	}
	off, err := u.le(4)
	if err != nil {
		return err
	}
	return u.match(off, 1+int(tag>>2))
}

func (u *unpacker) literal(n int) error {
	if n > u.size-u.done {
		return errUnpack
	}
	u.lit = n
	return nil
}

func (u *unpacker) match(off, n int) error {
	switch {
	case off == 0 || off > u.done || n > u.size-u.done:
		return errUnpack
	case off > unpackWindow:
		return errUnpackWindow
	}
	u.mlen, u.moff = n, off
	return nil
}

// produce decodes until the output buffer is full or the block ends, first dropping what is
// read and out of the window.
func (u *unpacker) produce() error {
	if k := min(u.rd, len(u.out)-unpackWindow); k > 0 {
		u.out = u.out[:copy(u.out, u.out[k:])]
		u.rd -= k
	}
	for len(u.out) < cap(u.out) && !u.end {
		switch {
		case u.lit > 0:
			if u.ip == len(u.in) {
				if err := u.refill(); err != nil {
					return err
				}
			}
			n := min(u.lit, len(u.in)-u.ip, cap(u.out)-len(u.out))
			u.out = append(u.out, u.in[u.ip:u.ip+n]...)
			u.ip += n
			u.lit -= n
			u.done += n
		case u.mlen > 0:
			n := min(u.mlen, cap(u.out)-len(u.out))
			u.mlen -= n
			u.done += n
			// An overlapping match repeats its last moff bytes: copy them a period at a time.
			for from := len(u.out) - u.moff; n > 0; {
				c := min(n, len(u.out)-from)
				u.out = append(u.out, u.out[from:from+c]...)
				from += c
				n -= c
			}
		default:
			if err := u.op(); err != nil {
				return err
			}
		}
	}
	return nil
}

// read fills dst with the next decoded bytes; dst nil skips n of them.
func (u *unpacker) read(dst []byte, n int) error {
	for n > 0 {
		if u.rd == len(u.out) {
			if u.end {
				return errUnpack
			}
			if err := u.produce(); err != nil {
				return err
			}
			continue
		}
		c := min(n, len(u.out)-u.rd)
		if dst != nil {
			dst = dst[copy(dst, u.out[u.rd:u.rd+c]):]
		}
		u.rd += c
		n -= c
	}
	return nil
}

// pos is how many decoded bytes have been read.
func (u *unpacker) pos() int { return u.done - (len(u.out) - u.rd) }

// finish checks that the block ends where its size says.
func (u *unpacker) finish() error {
	for !u.end {
		if u.rd < len(u.out) || u.lit > 0 || u.mlen > 0 {
			return errUnpack
		}
		if err := u.op(); err != nil {
			return err
		}
	}
	return nil
}

// unpackable is whether a compressed block of type typ can be decoded by an unpacker.
func (t *Table) unpackable(typ Compression) bool {
	switch typ {
	case LZ4Compression, LZ4HCCompression:
		// Format version 2+ frames the payload after its varint32 size (as block does).
		return t.Footer.FormatVersion >= 2
	case SnappyCompression:
		return true
	}
	return false
}

// at reads n decoded bytes at block offset pos (not before what was read) into *buf.
func (u *unpacker) at(pos, n int, buf *[]byte) ([]byte, error) {
	if pos < u.pos() {
		return nil, errUnpack
	}
	if err := u.read(nil, pos-u.pos()); err != nil {
		return nil, err
	}
	b := *buf
	if cap(b) < n {
		b = make([]byte, n)
		*buf = b
	}
	b = b[:n]
	return b, u.read(b, n)
}
