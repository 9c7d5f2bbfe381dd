package tableformat.catalog;

import java.util.LinkedHashMap;
import java.util.Map;

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

  private static String first(Map<String, String> o, String... keys) {
    for (String k : keys) {
      String v = o.get(k);
      if (v != null && !v.isEmpty()) return v;
    }
    return null;
  }

  /** s3fs's option names ({@code endpoint_url}, {@code key}, {@code secret}, {@code token},
   *  {@code anon}, {@code region}, {@code addressing_style}; boto3's names too) as s3a settings. */
  public static Map<String, String> s3a(String bucket, Map<String, String> o) {
    String pre = "fs.s3a.bucket." + bucket + ".";
    Map<String, String> out = new LinkedHashMap<>();
    String endpoint = o.get("endpoint_url");
    if (endpoint != null && !endpoint.isEmpty()) {
      out.put(pre + "endpoint", endpoint);
      out.put(pre + "path.style.access", "true");
      out.put(pre + "connection.ssl.enabled", String.valueOf(endpoint.startsWith("https")));
    }
    String key = first(o, "key", "aws_access_key_id");
    String secret = first(o, "secret", "aws_secret_access_key");
    String token = first(o, "token", "aws_session_token");
    if (key != null && secret != null) {
      out.put(pre + "access.key", key);
      out.put(pre + "secret.key", secret);
      out.put(pre + "aws.credentials.provider", "org.apache.hadoop.fs.s3a."
          + (token != null ? "TemporaryAWSCredentialsProvider" : "SimpleAWSCredentialsProvider"));
      if (token != null) out.put(pre + "session.token", token);
    } else if (Boolean.parseBoolean(o.getOrDefault("anon", "false"))) {
      out.put(pre + "aws.credentials.provider", "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider");
    }
    String region = first(o, "region", "region_name");
    if (region != null || out.containsKey(pre + "endpoint")) out.put(pre + "endpoint.region", region != null ? region : "us-east-1");
    String style = o.get("addressing_style");
    if (style != null && !style.isEmpty()) out.put(pre + "path.style.access", String.valueOf(style.equals("path")));
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
    java.util.Set<String> known = java.util.Set.of("endpoint_url", "key", "aws_access_key_id", "secret",
        "aws_secret_access_key", "token", "aws_session_token", "anon", "region", "region_name", "addressing_style");
    for (String k : o.keySet())
      if (!known.contains(k))
        throw new IllegalArgumentException("spark.sql.catalog." + catalog + "." + PREFIX + k + " is not a storage "
            + "option the catalog knows; use one of " + new java.util.TreeSet<>(known));
    if (!o.isEmpty() && bucket(warehouse) == null)
      throw new IllegalArgumentException("spark.sql.catalog." + catalog + ".storage.* options apply to an s3a:// "
          + "warehouse, and the warehouse is " + warehouse + "; set the file system's own Hadoop settings instead");
  }
}
