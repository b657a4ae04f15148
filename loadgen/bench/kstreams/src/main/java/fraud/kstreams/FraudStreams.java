package fraud.kstreams;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * docs/rule.md on Kafka Streams (Processor API), for scripts/bench/kstreams: one processor per
 * input partition, each card's state in a RocksDB key-value store with a changelog, alerts to
 * an output topic, exactly_once_v2. With --expect N it prints one JSON line once N input records
 * have been processed (wall time, CPU, peak RSS, counts), closes and exits. See README.md.
 */
public final class FraudStreams {
  static final String STORE = "cards";
  // Kept in each task's store beside the cards (card_refs are hex): the partition's stream time.
  static final String STREAM_TIME_KEY = "~stream-time";

  static final AtomicLong processed = new AtomicLong();
  static final AtomicLong firstRecordAtMs = new AtomicLong();
  static final AtomicLong alerts = new AtomicLong();
  static final AtomicLong rejected = new AtomicLong();
  static final AtomicLong late = new AtomicLong();
  static final AtomicLong duplicates = new AtomicLong();

  static final class Options {
    String brokers = "127.0.0.1:9092";
    String inputTopic = "transactions";
    String alertsTopic = "kstreams-alerts";
    String applicationId = "fraud-kstreams";
    String stateDir = "/tmp/fraud-kstreams";
    String keyFile;
    long expect;
    int threads = 1;
    long commitIntervalMs = 50;
    long windowMs = 600_000;
    long graceMs = 120_000;
    int threshold = 3;
    int maxEvents = 1000;
    long maxFutureSkewMs = 300_000;
  }

  static final class RuleProcessor implements Processor<byte[], byte[], String, String> {
    private final Options o;
    private final byte[] hashKey;
    private ProcessorContext<String, String> context;
    private KeyValueStore<String, byte[]> store;
    private Mac hmac;
    private MessageDigest sha256;
    private boolean hasStreamTime;
    private long streamTime;
    private long lastExpiry = Long.MIN_VALUE;

    RuleProcessor(Options o, byte[] hashKey) {
      this.o = o;
      this.hashKey = hashKey;
    }

    @Override
    public void init(ProcessorContext<String, String> context) {
      this.context = context;
      this.store = context.getStateStore(STORE);
      try {
        hmac = Mac.getInstance("HmacSHA256");
        hmac.init(new SecretKeySpec(hashKey, "HmacSHA256"));
        sha256 = MessageDigest.getInstance("SHA-256");
      } catch (java.security.GeneralSecurityException e) {
        throw new IllegalStateException(e);
      }
      byte[] saved = store.get(STREAM_TIME_KEY);
      if (saved != null) {
        hasStreamTime = true;
        streamTime = Long.parseLong(new String(saved, StandardCharsets.US_ASCII));
      }
      // Cards whose events and incident all fell out of W + G: dropped once a window of stream
      // time has passed since the last sweep (docs/rule.md §2: may be dropped at any moment).
      context.schedule(Duration.ofMillis(o.windowMs), PunctuationType.STREAM_TIME, t -> expire());
    }

    @Override
    public void process(Record<byte[], byte[]> record) {
      if (processed.incrementAndGet() == 1) firstRecordAtMs.set(System.currentTimeMillis());
      TransactionCodec.Transaction tx = TransactionCodec.decode(record.value());
      if (tx.rejected == null && tx.eventTime > record.timestamp() + o.maxFutureSkewMs
          && record.timestamp() < TransactionCodec.MAX_EVENT_TIME - o.maxFutureSkewMs) {
        tx.rejected = TransactionCodec.Reject.FUTURE_EVENT_TIME;
      }
      if (tx.rejected != null) {
        rejected.incrementAndGet();
        return;
      }
      long t = tx.eventTime;
      if (hasStreamTime && t < streamTime - o.graceMs) {
        late.incrementAndGet();
        return;
      }
      String cardRef = hex(hmac.doFinal(tx.card.getBytes(StandardCharsets.UTF_8)));
      CardRule card = CardRule.decode(store.get(cardRef));
      long liveBefore = hasStreamTime ? streamTime - o.graceMs - o.windowMs : Long.MIN_VALUE;
      if (card.isDuplicate(tx.txId, liveBefore)) {
        duplicates.incrementAndGet();
        return;
      }
      if (!hasStreamTime || t > streamTime) {
        hasStreamTime = true;
        streamTime = t;
        store.put(STREAM_TIME_KEY, Long.toString(streamTime).getBytes(StandardCharsets.US_ASCII));
      }
      CardRule.Alert alert = card.accept(t, tx.txId, tx.country,
          streamTime - o.graceMs - o.windowMs, o.windowMs, o.threshold, o.maxEvents);
      if (card.isEmpty()) {
        store.delete(cardRef);
      } else {
        store.put(cardRef, card.encode());
      }
      if (alert == null) return;
      String alertId = hex(sha256.digest((cardRef + ":" + alert.start)
          .getBytes(StandardCharsets.US_ASCII))).substring(0, 32);
      String key = alertId + ":" + alert.revision;
      RecordHeaders headers = new RecordHeaders();
      headers.add("idempotency-key", key.getBytes(StandardCharsets.US_ASCII));
      context.forward(new Record<>(cardRef, alertJson(alertId, key, cardRef, alert, tx),
          record.timestamp(), headers));
      alerts.incrementAndGet();
    }

    private String alertJson(String alertId, String key, String cardRef, CardRule.Alert a,
        TransactionCodec.Transaction tx) {
      StringBuilder j = new StringBuilder(512);
      j.append("{\"alert_id\":\"").append(alertId).append("\",\"idempotency_key\":\"").append(key)
          .append("\",\"revision\":").append(a.revision).append(",\"card_ref\":\"")
          .append(cardRef).append("\",\"rule\":\"distinct_countries\",\"threshold\":")
          .append(o.threshold).append(",\"window_ms\":").append(o.windowMs)
          .append(",\"grace_ms\":").append(o.graceMs).append(",\"window_start\":")
          .append(a.start).append(",\"window_end\":").append(a.end).append(",\"countries\":[");
      String sep = "";
      for (String c : a.countries) {
        j.append(sep).append('"').append(c).append('"');
        sep = ",";
      }
      j.append("],\"tx_ids\":[");
      sep = "";
      for (String id : a.txIds) {
        j.append(sep);
        quote(j, id);
        sep = ",";
      }
      j.append("],\"trigger_tx_id\":");
      quote(j, tx.txId);
      j.append(",\"trigger_event_time\":").append(tx.eventTime).append(",\"detected_at\":")
          .append(System.currentTimeMillis()).append('}');
      return j.toString();
    }

    private void expire() {
      if (!hasStreamTime) return;
      long liveFrom = streamTime - o.graceMs - o.windowMs;
      if (lastExpiry != Long.MIN_VALUE && liveFrom - lastExpiry < o.windowMs) return;
      if (lastExpiry == Long.MIN_VALUE) {
        lastExpiry = liveFrom;  // nothing accepted before now can be due yet in a fresh task
        return;
      }
      lastExpiry = liveFrom;
      List<String> dead = new ArrayList<>();
      try (KeyValueIterator<String, byte[]> all = store.all()) {
        while (all.hasNext()) {
          KeyValue<String, byte[]> entry = all.next();
          if (entry.key.equals(STREAM_TIME_KEY)) continue;
          if (CardRule.decode(entry.value).lastUseful() < liveFrom) dead.add(entry.key);
        }
      }
      for (String k : dead) store.delete(k);
    }
  }

  static void quote(StringBuilder j, String s) {
    j.append('"');
    for (int i = 0; i < s.length(); ++i) {
      char c = s.charAt(i);
      if (c == '"' || c == '\\') {
        j.append('\\').append(c);
      } else if (c < 0x20) {
        j.append(String.format("\\u%04x", (int) c));
      } else {
        j.append(c);
      }
    }
    j.append('"');
  }

  static String hex(byte[] bytes) {
    return HexFormat.of().formatHex(bytes);
  }

  static Options parse(String[] args) {
    Options o = new Options();
    Map<String, String> flags = new HashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) flags.put(args[i], args[i + 1]);
    if (args.length % 2 != 0 || flags.containsKey("--help")) {
      System.err.println("usage: FraudStreams --brokers B --card-hash-key-file F [--input-topic T]"
          + " [--alerts-topic T] [--application-id ID] [--state-dir DIR] [--expect N]"
          + " [--threads N] [--commit-interval-ms MS] [--window-ms MS] [--grace-ms MS]"
          + " [--threshold N] [--max-events M] [--max-future-skew-ms MS]");
      System.exit(2);
    }
    for (Map.Entry<String, String> f : flags.entrySet()) {
      String v = f.getValue();
      switch (f.getKey()) {
        case "--brokers" -> o.brokers = v;
        case "--input-topic" -> o.inputTopic = v;
        case "--alerts-topic" -> o.alertsTopic = v;
        case "--application-id" -> o.applicationId = v;
        case "--state-dir" -> o.stateDir = v;
        case "--card-hash-key-file" -> o.keyFile = v;
        case "--expect" -> o.expect = Long.parseLong(v);
        case "--threads" -> o.threads = Integer.parseInt(v);
        case "--commit-interval-ms" -> o.commitIntervalMs = Long.parseLong(v);
        case "--window-ms" -> o.windowMs = Long.parseLong(v);
        case "--grace-ms" -> o.graceMs = Long.parseLong(v);
        case "--threshold" -> o.threshold = Integer.parseInt(v);
        case "--max-events" -> o.maxEvents = Integer.parseInt(v);
        case "--max-future-skew-ms" -> o.maxFutureSkewMs = Long.parseLong(v);
        default -> {
          System.err.println("FraudStreams: unknown flag " + f.getKey());
          System.exit(2);
        }
      }
    }
    if (o.keyFile == null) {
      System.err.println("FraudStreams: --card-hash-key-file is required");
      System.exit(2);
    }
    return o;
  }

  /** The key file's bytes less one trailing newline (docs/rule.md §5). */
  static byte[] readKey(String path) throws java.io.IOException {
    byte[] bytes = Files.readAllBytes(Path.of(path));
    int n = bytes.length;
    if (n > 0 && bytes[n - 1] == '\n') --n;
    if (n < 32) throw new IllegalArgumentException("card-hash key under 32 bytes");
    return java.util.Arrays.copyOf(bytes, n);
  }

  /** utime + stime of this process, and its peak RSS (VmHWM) in KiB, from /proc/self. */
  static double cpuSeconds() throws java.io.IOException {
    String stat = Files.readString(Path.of("/proc/self/stat"));
    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) / 100.0;  // USER_HZ: 100 on Linux
  }

  static long peakRssKib() throws java.io.IOException {
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith("VmHWM:")) return Long.parseLong(line.replaceAll("[^0-9]", ""));
    }
    return -1;
  }

  public static void main(String[] args) throws Exception {
    Options o = parse(args);
    byte[] key = readKey(o.keyFile);
    Topology topology = new Topology();
    topology.addSource("transactions", new ByteArrayDeserializer(), new ByteArrayDeserializer(),
        o.inputTopic);
    topology.addProcessor("rule", () -> new RuleProcessor(o, key), "transactions");
    // Caching on, as the DSL has it (the Processor API's builder leaves it off): a card's changes
    // within a commit interval reach RocksDB and the changelog once, as the service's do.
    topology.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(STORE),
        Serdes.String(), Serdes.ByteArray()).withCachingEnabled(), "rule");
    topology.addSink("alerts", o.alertsTopic, new StringSerializer(), new StringSerializer(),
        "rule");

    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, o.applicationId);
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, o.brokers);
    p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    p.put(StreamsConfig.STATE_DIR_CONFIG, o.stateDir);
    p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, o.threads);
    p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, o.commitIntervalMs);
    p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    // The service's producer settings (service/stream_processor.cc).
    p.put(StreamsConfig.producerPrefix(ProducerConfig.LINGER_MS_CONFIG), 5);
    p.put(StreamsConfig.producerPrefix(ProducerConfig.COMPRESSION_TYPE_CONFIG), "lz4");

    KafkaStreams streams = new KafkaStreams(topology, p);
    long started = System.currentTimeMillis();
    streams.setUncaughtExceptionHandler(e -> {
      e.printStackTrace();
      return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
          .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
    });
    Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(30))));
    streams.start();
    if (o.expect <= 0) {
      Thread.currentThread().join();
    }
    long lastReport = started;
    while (processed.get() < o.expect) {
      if (streams.state() == KafkaStreams.State.ERROR
          || streams.state() == KafkaStreams.State.NOT_RUNNING
          || streams.state() == KafkaStreams.State.PENDING_ERROR) {
        System.err.println("FraudStreams: streams stopped: " + streams.state());
        System.exit(1);
      }
      Thread.sleep(20);
      if (System.currentTimeMillis() - lastReport >= 5000) {
        lastReport = System.currentTimeMillis();
        System.err.printf("FraudStreams: %d of %d records%n", processed.get(), o.expect);
      }
    }
    long doneAt = System.currentTimeMillis();
    double cpu = cpuSeconds();
    long rss = peakRssKib();
    System.out.printf("{\"records\":%d,\"done_at_ms\":%d,\"seconds_from_main\":%.3f,"
        + "\"seconds_from_first_record\":%.3f,"
        + "\"cpu_s\":%.2f,\"peak_rss_kib\":%d,\"alerts_emitted\":%d,\"rejected\":%d,"
        + "\"late_dropped\":%d,\"duplicate\":%d}%n", processed.get(), doneAt,
        (doneAt - started) / 1000.0,
        (doneAt - firstRecordAtMs.get()) / 1000.0, cpu, rss, alerts.get(), rejected.get(), late.get(),
        duplicates.get());
    System.out.flush();
    streams.close(Duration.ofSeconds(60));
    System.exit(0);
  }

  private FraudStreams() {}
}
