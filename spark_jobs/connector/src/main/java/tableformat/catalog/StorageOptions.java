package tableformat.catalog;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The catalog's {@code storage.<key>} options (a table's fsspec/s3fs {@code storage_options}, as
 * the engine takes them) as Hadoop s3a settings scoped to one bucket, {@code fs.s3a.bucket.<b>.*}:
 * the same mapping as {@code spark_jobs.session.s3a_settings}, so one set of options serves the
 * engine, the Spark jobs and {@code spark-sql}. Credentials go only into the session's Hadoop
 * settings, never into a plan, a property or a message.
 */
public final class StorageOptions {
  private StorageOptions() {}

  static final String PREFIX = "storage.";

  /** The {@code storage.*} entries of a catalog's options, prefix removed. */
  static Map<String, String> of(Map<String, String> catalogOptions) {
    Map<String, String> out = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : catalogOptions.entrySet())
      if (e.getKey().startsWith(PREFIX)) out.put(e.getKey().substring(PREFIX.length()), e.getValue());
    return out;
  }

  /** Each s3a setting from the first of these options present: s3fs's own names, a nested one
   *  dotted (client_kwargs.region_name); {@code spark_jobs.session.S3A_OPTIONS} holds the same table. */
  static final Map<String, List<String>> KEYS = new LinkedHashMap<>();
  static {
    KEYS.put("endpoint", List.of("endpoint_url", "client_kwargs.endpoint_url"));
    KEYS.put("key", List.of("key", "access.key", "aws_access_key_id", "client_kwargs.aws_access_key_id"));
    KEYS.put("secret", List.of("secret", "aws_secret_access_key", "client_kwargs.aws_secret_access_key"));
    KEYS.put("token", List.of("token", "client_kwargs.aws_session_token"));
    KEYS.put("anon", List.of("anon"));
    KEYS.put("region", List.of("client_kwargs.region_name"));
    KEYS.put("addressing_style", List.of("config_kwargs.s3.addressing_style"));
  }

  private static String first(Map<String, String> o, String setting) {
    for (String k : KEYS.get(setting)) {
      String v = o.get(k);
      if (v != null && !v.isEmpty()) return v;
    }
    return null;
  }

  /** A table's storage options as {@code storage.<key>} strings ({@code flat_storage_options}) as
   *  s3a settings; {@code anon} is true for "true" or "1", any case, as the engine reads it. */
  public static Map<String, String> s3a(String bucket, Map<String, String> o) {
    String pre = "fs.s3a.bucket." + bucket + ".";
    Map<String, String> out = new LinkedHashMap<>();
    String endpoint = first(o, "endpoint");
    if (endpoint != null) {
      out.put(pre + "endpoint", endpoint);
      out.put(pre + "path.style.access", "true");
      out.put(pre + "connection.ssl.enabled", String.valueOf(endpoint.startsWith("https")));
    }
    String key = first(o, "key");
    String secret = first(o, "secret");
    String token = first(o, "token");
    String anon = first(o, "anon");
    if (key != null && secret != null) {
      out.put(pre + "access.key", key);
      out.put(pre + "secret.key", secret);
      out.put(pre + "aws.credentials.provider", "org.apache.hadoop.fs.s3a."
          + (token != null ? "TemporaryAWSCredentialsProvider" : "SimpleAWSCredentialsProvider"));
      if (token != null) out.put(pre + "session.token", token);
    } else if (anon != null && Set.of("true", "1").contains(anon.strip().toLowerCase(Locale.ROOT))) {
      out.put(pre + "aws.credentials.provider", "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider");
    }
    String region = first(o, "region");
    if (region != null || endpoint != null) out.put(pre + "endpoint.region", region != null ? region : "us-east-1");
    String style = first(o, "addressing_style");
    if (style != null) out.put(pre + "path.style.access", String.valueOf(style.equals("path")));
    return out;
  }

  /** The bucket of an s3a:// URI, or null for another scheme. */
  static String bucket(String uri) {
    if (uri == null || !uri.startsWith("s3a://")) return null;
    String rest = uri.substring("s3a://".length());
    int slash = rest.indexOf('/');
    return slash < 0 ? rest : rest.substring(0, slash);
  }

  /** Check the keys: a misspelt option would otherwise be ignored and the read fail far from it. */
  static void check(String catalog, Map<String, String> o, String warehouse) {
    Set<String> known = new TreeSet<>();
    KEYS.values().forEach(known::addAll);
    for (String k : o.keySet())
      if (!known.contains(k))
        throw new IllegalArgumentException("spark.sql.catalog." + catalog + "." + PREFIX + k + " is not a storage "
            + "option the catalog knows; use one of " + known);
    if (!o.isEmpty() && bucket(warehouse) == null)
      throw new IllegalArgumentException("spark.sql.catalog." + catalog + ".storage.* options apply to an s3a:// "
          + "warehouse, and " + (warehouse == null ? "no warehouse is set: set spark.sql.catalog." + catalog
          + ".warehouse to s3a://<bucket>/<path>" : "the warehouse is " + warehouse
          + "; set the file system's own Hadoop settings instead"));
  }
}
