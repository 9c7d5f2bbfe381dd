package tableformat.deltas;

/**
 * A set of rowids, which are unsigned 32-bit (specs/format.md §9: {@code rowid} is uint32, so
 * a rowset holds up to 2^32 rows): a {@code java.util.BitSet} is indexed by int and stops at
 * 2^31. Bits sit in pages of 2^16, allocated as rows in them are set, so a few deletes far out
 * cost a page each, not a bitmap up to the highest rowid.
 */
public final class RowIdSet {
  public static final long LIMIT = 1L << 32;
  private static final int PAGE_BITS = 16, WORDS = (1 << PAGE_BITS) >>> 6;

  private long[][] pages = new long[0][];
  private long count;

  void set(long row) {
    if (row < 0 || row >= LIMIT) throw new IllegalArgumentException("rowid " + row + " is not an unsigned 32-bit value");
    int p = (int) (row >>> PAGE_BITS);
    if (p >= pages.length) pages = java.util.Arrays.copyOf(pages, Math.max(p + 1, pages.length * 2));
    if (pages[p] == null) pages[p] = new long[WORDS];
    int w = (int) (row & 0xFFFF) >>> 6;
    long bit = 1L << (row & 63);
    if ((pages[p][w] & bit) == 0) {
      pages[p][w] |= bit;
      count++;
    }
  }

  public boolean get(long row) {
    if (row < 0 || row >= LIMIT) return false;
    int p = (int) (row >>> PAGE_BITS);
    return p < pages.length && pages[p] != null && (pages[p][(int) (row & 0xFFFF) >>> 6] & (1L << (row & 63))) != 0;
  }

  /** The least rowid in the set at or after {@code from}; -1: none. */
  long nextSetBit(long from) {
    if (from < 0) from = 0;
    if (from >= LIMIT) return -1;
    int first = (int) (from >>> PAGE_BITS);
    for (int p = first; p < pages.length; p++) {
      long[] page = pages[p];
      if (page == null) continue;
      int start = p == first ? (int) (from & 0xFFFF) : 0;
      int w = start >>> 6;
      long word = page[w] & (-1L << (start & 63));
      while (true) {
        if (word != 0) return ((long) p << PAGE_BITS) + ((long) w << 6) + Long.numberOfTrailingZeros(word);
        if (++w == WORDS) break;
        word = page[w];
      }
    }
    return -1;
  }

  boolean isEmpty() {
    return count == 0;
  }

  /** The heap it holds: the page table and the pages allocated. */
  long bytes() {
    long b = 16 + 8L * pages.length;
    for (long[] page : pages) if (page != null) b += 8L * WORDS;
    return b;
  }
}
