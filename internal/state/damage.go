package state

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"

	"github.com/ckpt-dev/ckpt/internal/checkpoint"
	"github.com/ckpt-dev/ckpt/internal/recovery"
	"github.com/ckpt-dev/ckpt/internal/sstable"
	"github.com/ckpt-dev/ckpt/internal/statefmt"
	"github.com/ckpt-dev/ckpt/internal/storage"
)

// inventory is the listing as the recovery planner takes it (recovery.Options.State): the
// version files of every partition, without damage.
func inventory(l *Listing) *recovery.StateInventory {
	inv := &recovery.StateInventory{}
	for _, op := range l.Operators {
		o := recovery.StateOperator{ID: op.ID}
		for _, st := range op.Stores {
			s := recovery.StateStore{Name: st.Name, Provider: st.Provider}
			for _, p := range st.Partitions {
				sp := recovery.StatePartition{ID: p.ID, Dir: p.Dir}
				for _, f := range p.Files {
					sp.Files = append(sp.Files, recovery.StateFile{Path: f.Path, Version: f.Version, Kind: f.Kind, UniqueID: f.UniqueID})
				}
				s.Partitions = append(s.Partitions, sp)
			}
			o.Stores = append(o.Stores, s)
		}
		inv.Operators = append(inv.Operators, o)
	}
	return inv
}

// checkLoads reads every file of the planner's loads (a Plan with inv) and records in inv what
// each read found (recovery.StateFile.Damage); inv is then Checked. A file of a load that the
// listing does not hold is missing, which the planner knows already.
func checkLoads(ctx context.Context, st storage.Store, l *Listing, inv *recovery.StateInventory, load *recovery.StateLoad) error {
	want := map[string]bool{}
	for _, ld := range load.Loads {
		for _, f := range ld.Files {
			want[f] = true
		}
	}
	for oi := range inv.Operators {
		op := &inv.Operators[oi]
		for si := range op.Stores {
			s := &op.Stores[si]
			for pi := range s.Partitions {
				sp := &s.Partitions[pi]
				p := partitionOf(l, op.ID, s.Name, sp.ID)
				for fi := range sp.Files {
					f := &sp.Files[fi]
					if !want[f.Path] || p == nil {
						continue
					}
					d, format, err := fileDamage(ctx, st, p, File{Path: f.Path, Version: f.Version, Kind: f.Kind})
					if err != nil {
						return err
					}
					f.Damage, f.SSTFormat = d, format
				}
			}
		}
	}
	inv.Checked = true
	return nil
}

func partitionOf(l *Listing, op int64, store string, id int) *Partition {
	if o := l.Operator(op); o != nil {
		if s := o.Store(store); s != nil {
			return s.Partition(id)
		}
	}
	return nil
}

// FileDamage reads f as Spark's provider loads it and says how it fails: nil when it reads
// whole. A RocksDB zip is read with the SST files it lists (present, of the listed size,
// footers, then every block). Spark 4.1+'s checksum file <file>.crc, when there is one, is
// compared too (recovery.StateDamage.Checksum). An error is the store's, not damage.
func FileDamage(ctx context.Context, st storage.Store, p *Partition, f File) (*recovery.StateDamage, error) {
	d, _, err := fileDamage(ctx, st, p, f)
	return d, err
}

// fileDamage is FileDamage, and for a zip the highest table format version of the SST files it
// lists (recovery.StateFile.SSTFormat), read from their footers as the damage check opens them.
func fileDamage(ctx context.Context, st storage.Store, p *Partition, f File) (*recovery.StateDamage, int, error) {
	if f.Kind == KindZip {
		data, err := st.ReadFile(ctx, f.Path) // a zip holds metadata and small files, not rows
		if err != nil {
			return nil, 0, err
		}
		d, format, err := zipDamage(ctx, st, p, f.Path, data)
		if err != nil {
			return nil, 0, err
		}
		d, err = withChecksum(ctx, st, f.Path, d, crc32.Checksum(data, castagnoli), int64(len(data)))
		return d, format, err
	}
	// Deltas, snapshots and changelogs stream: they can be as large as the state.
	rc, err := st.Open(ctx, f.Path)
	if err != nil {
		return nil, 0, err
	}
	defer rc.Close()
	cr := &damageReader{r: rc, crc: crc32.New(castagnoli)}
	d, err := streamDamage(f, cr)
	if err != nil {
		return nil, 0, err
	}
	// The checksum covers the whole file, also past the damage.
	if _, err := io.Copy(io.Discard, cr); err != nil {
		return nil, 0, err
	}
	d, err = withChecksum(ctx, st, f.Path, d, cr.crc.Sum32(), cr.n)
	return d, 0, err
}

// damageReader counts and checksums what is read through it, and keeps the store's errors
// apart from the decoders' (ioErr).
type damageReader struct {
	r     io.Reader
	crc   hash.Hash32
	n     int64
	ioErr error
}

func (c *damageReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.crc.Write(p[:n])
	if err != nil && err != io.EOF {
		c.ioErr = err
	}
	return n, err
}

func withChecksum(ctx context.Context, st storage.Store, path string, d *recovery.StateDamage, sum uint32, size int64) (*recovery.StateDamage, error) {
	m, err := checksumMismatch(ctx, st, path, sum, size)
	if err != nil || m == nil {
		return d, err
	}
	if d == nil {
		d = &recovery.StateDamage{}
	}
	d.Checksum = m
	return d, nil
}

// streamDamage decodes a delta, snapshot or changelog to its end; an error is the store's.
func streamDamage(f File, cr *damageReader) (*recovery.StateDamage, error) {
	br := bufio.NewReaderSize(cr, 64<<10)
	head, _ := br.Peek(8)
	if cr.ioErr != nil {
		return nil, cr.ioErr
	}
	if len(head) == 0 {
		return &recovery.StateDamage{Kind: recovery.DamageEmpty}, nil
	}
	codec := statefmt.DetectCodec(head)
	if codec == "" {
		return &recovery.StateDamage{Kind: recovery.DamageCodecCorrupt, Detail: f.Path + ": no compression codec's framing"}, nil
	}
	err := decodeAll(f, codec, br)
	if cr.ioErr != nil {
		return nil, cr.ioErr
	}
	if err == nil {
		return nil, nil
	}
	d := &recovery.StateDamage{Kind: recovery.DamageCodecCorrupt, Detail: err.Error()}
	var se *statefmt.Error
	if errors.As(err, &se) {
		switch se.Problem {
		case statefmt.ProblemTruncated:
			d.Kind = recovery.DamageEndsEarly
		case statefmt.ProblemCodecTruncated:
			d.Kind = recovery.DamageCodecTruncated
		case statefmt.ProblemKeySize:
			d.Kind, d.Size = recovery.DamageKeySize, int64(se.Size)
		case statefmt.ProblemValueSize:
			d.Kind, d.Size = recovery.DamageValueSize, int64(se.Size)
		}
	}
	return d, nil
}

func decodeAll(f File, codec string, r io.Reader) error {
	dr, err := statefmt.Decompress(f.Path, codec, r)
	if err != nil {
		return err
	}
	defer dr.Close()
	kind := statefmt.Delta
	var src io.Reader = &stickyReader{r: dr}
	switch f.Kind {
	case KindSnapshot:
		kind = statefmt.Snapshot
	case KindChangelog:
		kind = statefmt.Changelog
		cb := bufio.NewReader(src)
		if _, err := statefmt.ReadChangelogHeader(f.Path, cb); err != nil {
			return err
		}
		src = cb
	}
	rr := statefmt.NewRecordReader(f.Path, kind, src)
	for {
		if _, err := rr.Next(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// stickyReader keeps returning the first error: bufio hands a read error out once and then
// reads on, past the damage, as if the stream went on there.
type stickyReader struct {
	r   io.Reader
	err error
}

func (s *stickyReader) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	s.err = err
	return n, err
}

// zipLocalHeader starts every zip entry; a zip cut short keeps its entries' headers but loses
// the central directory at its end, which Go's reader needs and Java's ZipInputStream does not.
var zipLocalHeader = []byte("PK\x03\x04")

func zipDamage(ctx context.Context, st storage.Store, p *Partition, path string, data []byte) (*recovery.StateDamage, int, error) {
	cp, err := statefmt.ParseRocksDBZip(path, data)
	if err != nil {
		kind := recovery.DamageZipCorrupt
		if bytes.HasPrefix(data, zipLocalHeader) && !bytes.Contains(data, []byte("PK\x05\x06")) {
			kind = recovery.DamageZipTruncated
		}
		return &recovery.StateDamage{Kind: kind, Detail: err.Error()}, 0, nil
	}
	for _, s := range cp.SSTFiles {
		sp := p.Dir + "/SSTs/" + s.DFSName()
		size, ok := p.SSTs[s.DFSName()]
		if !ok {
			size = -1
		}
		if !ok || size != s.SizeBytes {
			return &recovery.StateDamage{Kind: recovery.DamageSSTMissing, File: sp, Size: size}, 0, nil
		}
	}
	// RocksDB opens every file's footer before the batch reads any block.
	var blockErr *recovery.StateDamage
	format := 0
	for _, s := range cp.SSTFiles {
		sp := p.Dir + "/SSTs/" + s.DFSName()
		b, err := st.ReadFile(ctx, sp)
		if err != nil {
			return nil, 0, err
		}
		if ft, err := sstable.ParseFooter(sp, b[len(b)-min(len(b), sstable.FooterLen):], int64(len(b))); err == nil {
			format = max(format, int(ft.FormatVersion))
		}
		err = CheckSST(sp, b)
		var se *sstable.Error
		switch {
		case err == nil:
		case errors.As(err, &se) && se.Block == "footer":
			d := &recovery.StateDamage{Kind: recovery.DamageSSTFooter, File: sp, Detail: err.Error()}
			if len(b) >= 8 {
				d.Magic = binary.LittleEndian.Uint64(b[len(b)-8:])
			}
			return d, format, nil
		case blockErr == nil:
			blockErr = &recovery.StateDamage{Kind: recovery.DamageSSTBlock, File: sp, Detail: err.Error()}
		}
	}
	return blockErr, format, nil
}

// sparkChecksum is Spark 4.1's checksum file (ChecksumCheckpointFileManager): JSON next to the
// file, named <file>.crc.
type sparkChecksum struct {
	Algorithm    string `json:"algorithm"`
	Value        int32  `json:"value"`
	MainFileSize int64  `json:"mainFileSize"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksumMismatch compares a file's CRC32C and size with path's Spark checksum file, nil when
// there is none or it matches (or is not one ckpt reads).
func checksumMismatch(ctx context.Context, st storage.Store, path string, sum uint32, size int64) (*recovery.ChecksumMismatch, error) {
	raw, err := st.ReadFile(ctx, path+".crc")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var c sparkChecksum
	if json.Unmarshal(raw, &c) != nil || c.Algorithm != "CRC32C" {
		return nil, nil
	}
	got := int32(sum)
	if got == c.Value && size == c.MainFileSize {
		return nil, nil
	}
	return &recovery.ChecksumMismatch{Expected: c.Value, Computed: got, ExpectedSize: c.MainFileSize, Size: size}, nil
}

// Restart is recovery.Plan with the state the restart loads (see WithState).
func Restart(ctx context.Context, cp *checkpoint.Checkpoint, opts recovery.Options, read bool) (*recovery.Result, *Listing, error) {
	opts, l, err := WithState(ctx, cp, opts, read)
	if err != nil {
		return nil, nil, err
	}
	res, err := recovery.Plan(ctx, cp, opts)
	return res, l, err
}

// WithState gives opts the state the restart loads, for recovery.Plan or recovery.Assess: the
// checkpoint's state/ listed once and, with read, the files of every load read for damage (a
// first Plan says which files those are) and the first rows of each store checked against its
// schema file (CheckSchemaFit). Without state/, or with opts.State already set, opts
// is returned as it is. The listing is returned for the caller's own findings (nil without
// state/).
func WithState(ctx context.Context, cp *checkpoint.Checkpoint, opts recovery.Options, read bool) (recovery.Options, *Listing, error) {
	hasState := false
	for _, e := range cp.Root {
		hasState = hasState || (e.IsDir && e.Path == "state")
	}
	if !hasState || opts.State != nil {
		return opts, nil, nil
	}
	l, err := Scan(ctx, cp.Store)
	if err != nil {
		return opts, nil, err
	}
	inv := inventory(l)
	opts.State = inv
	if !read {
		return opts, l, nil
	}
	res, err := recovery.Plan(ctx, cp, opts)
	if err != nil || res.State == nil || len(res.State.Loads) == 0 {
		return opts, l, err
	}
	if err := checkLoads(ctx, cp.Store, l, inv, res.State); err != nil {
		return opts, nil, err
	}
	checkSchemas(ctx, cp, l, inv, res.State.Version)
	return opts, l, nil
}
