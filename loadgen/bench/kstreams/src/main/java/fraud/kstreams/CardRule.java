package fraud.kstreams;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.TreeSet;

/**
 * One card's state and the rule of docs/rule.md §2-§4 on it: pure, no Kafka. Events are kept in
 * order of acceptance; "earliest" sorts by event time, then acceptance (a sequence number).
 */
final class CardRule {
  static final class Event {
    final long time;
    final long seq;
    final String txId;
    final String country;

    Event(long time, long seq, String txId, String country) {
      this.time = time;
      this.seq = seq;
      this.txId = txId;
      this.country = country;
    }
  }

  static final Comparator<Event> BY_TIME = Comparator.<Event>comparingLong(e -> e.time)
      .thenComparingLong(e -> e.seq);

  /** What §3 found for one accepted record: s*, C* and the tx_ids of S(s*). */
  static final class Detection {
    final long start;
    final TreeSet<String> countries;
    final List<String> txIds;

    Detection(long start, TreeSet<String> countries, List<String> txIds) {
      this.start = start;
      this.countries = countries;
      this.txIds = txIds;
    }
  }

  /** An alert to emit (§4): the incident as it stands after the record. */
  static final class Alert {
    final long start;
    final long end;
    final int revision;
    final TreeSet<String> countries;
    final List<String> txIds;

    Alert(long start, long end, int revision, TreeSet<String> countries, List<String> txIds) {
      this.start = start;
      this.end = end;
      this.revision = revision;
      this.countries = countries;
      this.txIds = txIds;
    }
  }

  final List<Event> events = new ArrayList<>();
  long nextSeq;
  boolean hasIncident;
  long incidentStart;
  long incidentEnd;
  int incidentRevision;
  TreeSet<String> incidentCountries = new TreeSet<>();

  /** §2: a live event with this tx_id (liveness against the stream time before the record). */
  boolean isDuplicate(String txId, long liveFrom) {
    for (Event e : events) {
      if (e.time >= liveFrom && e.txId.equals(txId)) return true;
    }
    return false;
  }

  /**
   * §2 accept (with the per-card cap M), §3 detect, §4 incident. `liveFrom` = ST - G - W with
   * ST after the record. Returns the alert to emit, or null.
   */
  Alert accept(long t, String txId, String country, long liveFrom, long window, int threshold,
      int maxEvents) {
    events.add(new Event(t, nextSeq++, txId, country));
    dropBefore(liveFrom);
    while (events.size() > maxEvents) {
      events.remove(events.stream().min(BY_TIME).orElseThrow());
    }
    Detection d = detect(t, window, threshold);
    if (d == null) return null;
    if (!hasIncident || d.start > incidentEnd) {
      hasIncident = true;
      incidentStart = d.start;
      incidentEnd = d.start + window;
      incidentRevision = 1;
      incidentCountries = new TreeSet<>(d.countries);
      return new Alert(incidentStart, incidentEnd, 1, incidentCountries, d.txIds);
    }
    incidentEnd = Math.max(incidentEnd, d.start + window);
    if (incidentCountries.containsAll(d.countries)) return null;
    incidentCountries.addAll(d.countries);
    ++incidentRevision;
    return new Alert(incidentStart, incidentEnd, incidentRevision, incidentCountries, d.txIds);
  }

  /** §3: the smallest qualifying s among the events' times in [t - W, t]. */
  Detection detect(long t, long window, int threshold) {
    List<Event> sorted = new ArrayList<>(events);
    sorted.sort(BY_TIME);
    long previous = Long.MIN_VALUE;
    for (Event from : sorted) {
      long s = from.time;
      if (s < t - window || s > t || s == previous) continue;
      previous = s;
      TreeSet<String> countries = new TreeSet<>();
      for (Event e : sorted) {
        if (e.time >= s && e.time <= s + window) countries.add(e.country);
      }
      if (countries.size() >= threshold) {
        List<String> txIds = new ArrayList<>();
        for (Event e : sorted) {
          if (e.time >= s && e.time <= s + window) txIds.add(e.txId);
        }
        return new Detection(s, countries, txIds);
      }
    }
    return null;
  }

  /** Drops events that are no longer live and an incident that can no longer be extended. */
  void dropBefore(long liveFrom) {
    events.removeIf(e -> e.time < liveFrom);
    if (hasIncident && incidentEnd < liveFrom) {
      hasIncident = false;
      incidentCountries = new TreeSet<>();
    }
  }

  boolean isEmpty() {
    return events.isEmpty() && !hasIncident;
  }

  byte[] encode() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + events.size() * 40);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeLong(nextSeq);
      out.writeInt(events.size());
      for (Event e : events) {
        out.writeLong(e.time);
        out.writeLong(e.seq);
        out.writeUTF(e.txId);
        out.writeUTF(e.country);
      }
      out.writeBoolean(hasIncident);
      if (hasIncident) {
        out.writeLong(incidentStart);
        out.writeLong(incidentEnd);
        out.writeInt(incidentRevision);
        out.writeInt(incidentCountries.size());
        for (String c : incidentCountries) out.writeUTF(c);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  static CardRule decode(byte[] bytes) {
    CardRule card = new CardRule();
    if (bytes == null) return card;
    try (DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(bytes))) {
      card.nextSeq = in.readLong();
      int n = in.readInt();
      for (int i = 0; i < n; ++i) {
        card.events.add(new Event(in.readLong(), in.readLong(), in.readUTF(), in.readUTF()));
      }
      card.hasIncident = in.readBoolean();
      if (card.hasIncident) {
        card.incidentStart = in.readLong();
        card.incidentEnd = in.readLong();
        card.incidentRevision = in.readInt();
        int c = in.readInt();
        for (int i = 0; i < c; ++i) card.incidentCountries.add(in.readUTF());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return card;
  }

  /** The latest time this card's state still matters to: its last event or incident end. */
  long lastUseful() {
    long last = hasIncident ? incidentEnd : Long.MIN_VALUE;
    for (Event e : events) last = Math.max(last, e.time);
    return last;
  }
}
