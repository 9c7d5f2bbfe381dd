package tableformat.catalog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;
import tableformat.log.AsOf;
import tableformat.log.InvalidTagNameError;

/** {@code VERSION AS OF} and the {@code versionAsOf} option: digits are a version (a negative one too,
 *  which the resolver refuses as VersionNotFoundError), anything else a tag (specs/format.md §8.2, §9.5). */
class VersionAsOfTest {
  @Test
  void digitsAreVersionsAndANegativeOneIsNoTagName() {
    assertEquals(AsOf.version(12), TableFormatCatalog.versionAsOf(" 12 "));
    assertEquals(AsOf.version(-1), TableFormatCatalog.versionAsOf("-1"));
    assertEquals(AsOf.Kind.TAG, TableFormatCatalog.versionAsOf("nightly").kind());
    assertEquals("nightly", TableFormatCatalog.versionAsOf("tag:nightly").tag());
    assertThrows(InvalidTagNameError.class, () -> TableFormatCatalog.versionAsOf("1abc"));
  }
}
