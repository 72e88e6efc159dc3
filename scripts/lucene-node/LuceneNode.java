// A stand-in for an OpenSearch node, for tests and anchors where no OpenSearch can run: no registry
// reachable from these machines ships one (Maven Central is not reachable; PyPI, npm and Debian
// ship clients only). It answers the part of OpenSearch's REST API that ragsweep sends, on Lucene
// 8.7 from Debian's liblucene8-java: indexes with BM25 similarity settings (OpenSearch's BM25, i.e.
// Lucene's LegacyBM25Similarity) and analyzers (standard, english, portuguese, simple, whitespace,
// custom), text and keyword fields, _bulk, _refresh, _count, _search with match, multi_match, bool,
// term, terms and match_all, _explain, _analyze, _mapping, _stats, scroll, and deletes. Anything
// else is answered 400 with the reason, never guessed. It is not OpenSearch: its numbers are
// Lucene's BM25 with OpenSearch's analyzer definitions, and every request line goes to the log so a
// test can check what a client sent.
//
// java -cp CLASSPATH LuceneNode PORT LOG [--api-key KEY | --basic USER:PASSWORD]

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.*;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.lucene.analysis.*;
import org.apache.lucene.analysis.core.*;
import org.apache.lucene.analysis.custom.CustomAnalyzer;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.analysis.miscellaneous.PerFieldAnalyzerWrapper;
import org.apache.lucene.analysis.pt.PortugueseAnalyzer;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.analysis.tokenattributes.*;
import org.apache.lucene.document.*;
import org.apache.lucene.index.*;
import org.apache.lucene.search.*;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.search.similarities.Similarity;
import org.apache.lucene.search.similarity.LegacyBM25Similarity;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.util.BytesRef;
import org.apache.lucene.util.QueryBuilder;

public class LuceneNode {
    static final ObjectMapper JSON = new ObjectMapper();
    static final Map<String, Idx> INDEXES = new ConcurrentHashMap<>();
    static final Map<String, Scroll> SCROLLS = new ConcurrentHashMap<>();
    static final AtomicLong SCROLL_IDS = new AtomicLong();
    static String expectedAuth;
    static PrintWriter log;

    /** A request the node does not answer: 400 with the reason (404 for a missing index). */
    static class Refused extends RuntimeException {
        final int status;
        final String type;
        Refused(int status, String type, String reason) {
            super(reason);
            this.status = status;
            this.type = type;
        }
    }

    static Refused bad(String reason) {
        return new Refused(400, "parsing_exception", reason);
    }

    /** One index: its settings and mappings as created, its analyzers and similarity, its writer. */
    static class Idx {
        final String name;
        final ObjectNode settings;
        final ObjectNode mappings;
        final Map<String, Analyzer> analyzers = new HashMap<>();
        final Map<String, String> fieldTypes = new LinkedHashMap<>();
        final Map<String, String> fieldAnalyzer = new HashMap<>();
        final Similarity similarity;
        final IndexWriter writer;
        volatile DirectoryReader reader;
        long indexed = 0;

        Idx(String name, JsonNode body) throws IOException {
            this.name = name;
            JsonNode s = body.path("settings");
            if (s.has("index")) s = s.get("index");
            settings = s.isObject() ? (ObjectNode) s.deepCopy() : JSON.createObjectNode();
            JsonNode m = body.path("mappings");
            mappings = m.isObject() ? (ObjectNode) m.deepCopy() : JSON.createObjectNode();
            for (String k : List.of("standard", "english", "portuguese", "simple", "whitespace", "keyword"))
                analyzers.put(k, builtIn(k, null));
            JsonNode defs = settings.path("analysis").path("analyzer");
            for (Iterator<Map.Entry<String, JsonNode>> it = defs.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                analyzers.put(e.getKey(), analyzer(e.getValue(), settings.path("analysis")));
            }
            if (!analyzers.containsKey("default")) analyzers.put("default", analyzers.get("standard"));
            JsonNode sim = settings.path("similarity").path("default");
            if (sim.isMissingNode()) {
                similarity = new LegacyBM25Similarity();
            } else {
                if (!"BM25".equals(sim.path("type").asText("BM25")))
                    throw bad("similarity type " + sim.path("type") + " is not served here (BM25 only)");
                similarity = new LegacyBM25Similarity(
                        (float) sim.path("k1").asDouble(1.2), (float) sim.path("b").asDouble(0.75));
            }
            for (Iterator<Map.Entry<String, JsonNode>> it = mappings.path("properties").fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                String type = e.getValue().path("type").asText("");
                if (!Set.of("text", "keyword", "integer", "long").contains(type))
                    throw bad("field type [" + type + "] of [" + e.getKey() + "] is not served here");
                fieldTypes.put(e.getKey(), type);
                String a = e.getValue().path("analyzer").asText("default");
                if (!analyzers.containsKey(a)) throw bad("analyzer [" + a + "] has not been configured in mappings");
                fieldAnalyzer.put(e.getKey(), a);
            }
            Map<String, Analyzer> perField = new HashMap<>();
            for (Map.Entry<String, String> e : fieldAnalyzer.entrySet())
                perField.put(e.getKey(), analyzers.get(e.getValue()));
            IndexWriterConfig config = new IndexWriterConfig(new PerFieldAnalyzerWrapper(analyzers.get("default"), perField));
            config.setSimilarity(similarity);
            writer = new IndexWriter(new ByteBuffersDirectory(), config);
            reader = DirectoryReader.open(writer);
        }

        Analyzer analyzerOf(String field) {
            if ("keyword".equals(fieldTypes.get(field))) return analyzers.get("keyword");
            return analyzers.get(fieldAnalyzer.getOrDefault(field, "default"));
        }

        IndexSearcher searcher() {
            IndexSearcher searcher = new IndexSearcher(reader);
            searcher.setSimilarity(similarity);
            return searcher;
        }

        synchronized void put(String id, JsonNode source) throws IOException {
            Document doc = new Document();
            doc.add(new StringField("_id", id, Field.Store.YES));
            doc.add(new StoredField("_source", JSON.writeValueAsString(source)));
            for (Iterator<Map.Entry<String, JsonNode>> it = source.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                String type = fieldTypes.get(e.getKey());
                if (type == null) continue; // not mapped: kept in _source only (dynamic: false)
                List<JsonNode> values = new ArrayList<>();
                if (e.getValue().isArray()) e.getValue().forEach(values::add);
                else values.add(e.getValue());
                for (JsonNode v : values) {
                    if (v.isNull()) continue;
                    if (type.equals("text")) doc.add(new TextField(e.getKey(), v.asText(), Field.Store.NO));
                    else doc.add(new StringField(e.getKey(), v.asText(), Field.Store.NO));
                }
            }
            writer.updateDocument(new Term("_id", id), doc);
            indexed++;
        }

        synchronized void refresh() throws IOException {
            DirectoryReader fresh = DirectoryReader.openIfChanged(reader, writer);
            if (fresh != null) reader = fresh;
        }
    }

    static Analyzer builtIn(String type, JsonNode def) {
        CharArraySet stop = def == null ? null : stopwords(def.path("stopwords"), null);
        switch (type) {
            case "standard": return new StandardAnalyzer(stop == null ? CharArraySet.EMPTY_SET : stop);
            case "english": return stop == null ? new EnglishAnalyzer() : new EnglishAnalyzer(stop);
            case "portuguese": return stop == null ? new PortugueseAnalyzer() : new PortugueseAnalyzer(stop);
            case "simple": return new SimpleAnalyzer();
            case "whitespace": return new WhitespaceAnalyzer();
            case "keyword": return new KeywordAnalyzer();
            default: throw bad("analyzer type [" + type + "] is not served here");
        }
    }

    static CharArraySet stopwords(JsonNode value, CharArraySet fallback) {
        if (value.isMissingNode() || value.isNull()) return fallback;
        if (value.isArray()) {
            List<String> words = new ArrayList<>();
            value.forEach(w -> words.add(w.asText()));
            return new CharArraySet(words, false);
        }
        switch (value.asText()) {
            case "_english_": return EnglishAnalyzer.ENGLISH_STOP_WORDS_SET;
            case "_portuguese_": return PortugueseAnalyzer.getDefaultStopSet();
            case "_none_": return CharArraySet.EMPTY_SET;
            default: throw bad("stopwords [" + value.asText() + "] are not served here");
        }
    }

    /** An analyzer as OpenSearch's settings define one: a built-in type, or custom. */
    static Analyzer analyzer(JsonNode def, JsonNode analysis) throws IOException {
        String type = def.path("type").asText("custom");
        if (!type.equals("custom")) return builtIn(type, def);
        String tokenizer = def.path("tokenizer").asText("");
        Map<String, String> tokenizers = Map.of("standard", "standard", "whitespace", "whitespace",
                "letter", "letter", "keyword", "keyword", "classic", "classic");
        if (!tokenizers.containsKey(tokenizer)) throw bad("tokenizer [" + tokenizer + "] is not served here");
        CustomAnalyzer.Builder b = CustomAnalyzer.builder().withTokenizer(tokenizers.get(tokenizer));
        for (JsonNode f : def.path("filter")) {
            String name = f.asText();
            JsonNode own = analysis.path("filter").path(name);
            String ftype = own.isMissingNode() ? name : own.path("type").asText("");
            switch (ftype) {
                case "lowercase": b.addTokenFilter("lowercase"); break;
                case "asciifolding": b.addTokenFilter("asciiFolding"); break;
                case "porter_stem": b.addTokenFilter("porterStem"); break;
                case "kstem": b.addTokenFilter("kStem"); break;
                case "classic": b.addTokenFilter("classic"); break;
                case "stop": {
                    CharArraySet set = stopwords(own.path("stopwords"), EnglishAnalyzer.ENGLISH_STOP_WORDS_SET);
                    StopFilterHolder.next = set; // read by the constructor the next line calls
                    b.addTokenFilter(StopFilterHolder.class, new HashMap<>());
                    break;
                }
                case "stemmer": {
                    String lang = own.path("language").asText(own.path("name").asText("english"));
                    Map<String, String> stemmers = Map.of("english", "porterStem", "light_english", "kStem",
                            "minimal_english", "englishMinimalStem", "possessive_english", "englishPossessive",
                            "portuguese", "portugueseLightStem", "light_portuguese", "portugueseLightStem",
                            "minimal_portuguese", "portugueseMinimalStem", "portuguese_rslp", "portugueseStem");
                    if (!stemmers.containsKey(lang)) throw bad("stemmer language [" + lang + "] is not served here");
                    b.addTokenFilter(stemmers.get(lang));
                    break;
                }
                default: throw bad("token filter [" + name + "] is not served here");
            }
        }
        return b.build();
    }

    /** A stop filter factory whose word set is given in code (CustomAnalyzer takes files otherwise). */
    public static class StopFilterHolder extends org.apache.lucene.analysis.util.TokenFilterFactory {
        static CharArraySet next;
        final CharArraySet words;
        public StopFilterHolder(Map<String, String> args) {
            super(args);
            words = next;
        }
        @Override
        public TokenStream create(TokenStream input) {
            return new org.apache.lucene.analysis.StopFilter(input, words);
        }
    }

    // ---- the query DSL subset ----

    static Query query(Idx idx, JsonNode q) {
        if (!q.isObject() || q.size() != 1) throw bad("a query is an object with one key, found " + q);
        String kind = q.fieldNames().next();
        JsonNode body = q.get(kind);
        switch (kind) {
            case "match_all": return new MatchAllDocsQuery();
            case "match": return match(idx, body);
            case "multi_match": return multiMatch(idx, body);
            case "bool": return bool(idx, body);
            case "term": {
                Map.Entry<String, JsonNode> e = body.fields().next();
                JsonNode v = e.getValue().isObject() ? e.getValue().path("value") : e.getValue();
                return new TermQuery(new Term(e.getKey(), v.asText()));
            }
            case "terms": {
                if (body.size() != 1) throw bad("[terms] takes one field");
                Map.Entry<String, JsonNode> e = body.fields().next();
                if (!e.getValue().isArray()) throw bad("[terms] query takes an array of values");
                List<BytesRef> values = new ArrayList<>();
                e.getValue().forEach(v -> values.add(new BytesRef(v.asText())));
                return new ConstantScoreQuery(new TermInSetQuery(e.getKey(), values));
            }
            default: throw bad("unknown query [" + kind + "]");
        }
    }

    static Query match(Idx idx, JsonNode body) {
        if (body.size() != 1) throw bad("[match] query doesn't support multiple fields");
        Map.Entry<String, JsonNode> e = body.fields().next();
        JsonNode v = e.getValue();
        String text = v.isObject() ? v.path("query").asText() : v.asText();
        String operator = v.isObject() ? v.path("operator").asText("or").toLowerCase() : "or";
        float boost = v.isObject() ? (float) v.path("boost").asDouble(1.0) : 1f;
        return fieldMatch(idx, e.getKey(), text, operator, boost);
    }

    static Query fieldMatch(Idx idx, String field, String text, String operator, float boost) {
        QueryBuilder builder = new QueryBuilder(idx.analyzerOf(field));
        Query q = builder.createBooleanQuery(field, text, operator.equals("and") ? BooleanClause.Occur.MUST : BooleanClause.Occur.SHOULD);
        if (q == null) q = new MatchNoDocsQuery("no terms after analysis");
        return boost == 1f ? q : new BoostQuery(q, boost);
    }

    static Query multiMatch(Idx idx, JsonNode body) {
        String text = body.path("query").asText();
        String type = body.path("type").asText("best_fields");
        String operator = body.path("operator").asText("or").toLowerCase();
        float tie = (float) body.path("tie_breaker").asDouble(0.0);
        List<Query> perField = new ArrayList<>();
        for (JsonNode f : body.path("fields")) {
            String[] parts = f.asText().split("\\^");
            float boost = parts.length > 1 ? Float.parseFloat(parts[1]) : 1f;
            perField.add(fieldMatch(idx, parts[0], text, operator, boost));
        }
        if (perField.isEmpty()) throw bad("[multi_match] needs [fields]");
        if (type.equals("best_fields")) return new DisjunctionMaxQuery(perField, tie);
        if (!type.equals("most_fields")) throw bad("[multi_match] type [" + type + "] is not served here");
        BooleanQuery.Builder b = new BooleanQuery.Builder();
        perField.forEach(q -> b.add(q, BooleanClause.Occur.SHOULD));
        return b.build();
    }

    static List<JsonNode> clauses(JsonNode v) {
        List<JsonNode> out = new ArrayList<>();
        if (v.isArray()) v.forEach(out::add);
        else if (!v.isMissingNode()) out.add(v);
        return out;
    }

    static Query bool(Idx idx, JsonNode body) {
        BooleanQuery.Builder b = new BooleanQuery.Builder();
        Map<String, BooleanClause.Occur> occurs = Map.of("must", BooleanClause.Occur.MUST, "should",
                BooleanClause.Occur.SHOULD, "filter", BooleanClause.Occur.FILTER, "must_not", BooleanClause.Occur.MUST_NOT);
        for (Iterator<String> it = body.fieldNames(); it.hasNext(); ) {
            String key = it.next();
            if (!occurs.containsKey(key) && !key.equals("minimum_should_match"))
                throw bad("[bool] query does not support [" + key + "]");
        }
        int required = 0, should = 0;
        for (Map.Entry<String, BooleanClause.Occur> o : occurs.entrySet())
            for (JsonNode c : clauses(body.path(o.getKey()))) {
                b.add(query(idx, c), o.getValue());
                if (o.getValue() == BooleanClause.Occur.SHOULD) should++;
                else if (o.getValue() != BooleanClause.Occur.MUST_NOT) required++;
            }
        // OpenSearch: 1 when there are should clauses and no must or filter, else 0.
        int msm = body.has("minimum_should_match") ? body.get("minimum_should_match").asInt()
                : (should > 0 && required == 0 ? 1 : 0);
        b.setMinimumNumberShouldMatch(msm);
        if (required == 0 && should == 0) b.add(new MatchAllDocsQuery(), BooleanClause.Occur.MUST);
        return b.build();
    }

    // ---- answers ----

    static ObjectNode hit(Idx idx, IndexSearcher s, ScoreDoc d, boolean source) throws IOException {
        Document doc = s.doc(d.doc);
        ObjectNode h = JSON.createObjectNode();
        h.put("_index", idx.name);
        h.put("_id", doc.get("_id"));
        if (Float.isNaN(d.score)) h.putNull("_score");
        else h.put("_score", d.score);
        if (source) h.set("_source", JSON.readTree(doc.get("_source")));
        return h;
    }

    static ObjectNode hits(Idx idx, IndexSearcher s, TopDocs top, int from, boolean source) throws IOException {
        ObjectNode out = JSON.createObjectNode();
        out.put("took", 1);
        out.put("timed_out", false);
        ObjectNode hits = out.putObject("hits");
        hits.putObject("total").put("value", top.totalHits.value).put("relation", "eq");
        ArrayNode list = hits.putArray("hits");
        for (int i = from; i < top.scoreDocs.length; i++) list.add(hit(idx, s, top.scoreDocs[i], source));
        return out;
    }

    static boolean wantsSource(JsonNode body) {
        JsonNode s = body.path("_source");
        return s.isMissingNode() || (s.isBoolean() ? s.asBoolean() : true);
    }

    static ObjectNode search(Idx idx, JsonNode body, Map<String, String> params) throws IOException {
        for (Iterator<String> it = body.fieldNames(); it.hasNext(); ) {
            String k = it.next();
            if (!Set.of("query", "size", "from", "_source", "sort", "track_total_hits").contains(k))
                throw bad("unknown key [" + k + "] in the search body (not served here)");
        }
        int size = body.path("size").asInt(10), from = body.path("from").asInt(0);
        if (from + size > 10000) throw bad("Result window is too large, from + size must be less than or equal to: [10000]");
        Query q = query(idx, body.path("query").isMissingNode() ? JSON.readTree("{\"match_all\":{}}") : body.get("query"));
        IndexSearcher s = idx.searcher();
        boolean source = wantsSource(body);
        if (params.containsKey("scroll")) {
            if (!body.path("sort").toString().contains("_doc")) throw bad("a scroll is served here sorted by [_doc] only");
            Scroll scroll = new Scroll(idx, s, q, size, source);
            String id = "scroll-" + SCROLL_IDS.incrementAndGet();
            SCROLLS.put(id, scroll);
            ObjectNode out = scroll.next();
            out.put("_scroll_id", id);
            return out;
        }
        if (body.has("sort")) throw bad("sorting is served here only in a scroll, by [_doc]");
        return hits(idx, s, s.search(q, from + size), from, source);
    }

    /** A scroll over one reader, in index order. */
    static class Scroll {
        final Idx idx; final IndexSearcher s; final Query q; final int size; final boolean source;
        ScoreDoc after = null;
        Scroll(Idx idx, IndexSearcher s, Query q, int size, boolean source) {
            this.idx = idx; this.s = s; this.q = q; this.size = size; this.source = source;
        }
        synchronized ObjectNode next() throws IOException {
            TopDocs top = s.searchAfter(after, q, size, Sort.INDEXORDER);
            if (top.scoreDocs.length > 0) after = top.scoreDocs[top.scoreDocs.length - 1];
            return hits(idx, s, top, 0, source);
        }
    }

    static ObjectNode explanation(Explanation e) {
        ObjectNode n = JSON.createObjectNode();
        n.put("value", e.getValue().doubleValue());
        n.put("description", e.getDescription());
        ArrayNode details = n.putArray("details");
        for (Explanation d : e.getDetails()) details.add(explanation(d));
        return n;
    }

    static ObjectNode explain(Idx idx, String id, JsonNode body) throws IOException {
        IndexSearcher s = idx.searcher();
        TopDocs found = s.search(new TermQuery(new Term("_id", id)), 1);
        ObjectNode out = JSON.createObjectNode();
        out.put("_index", idx.name);
        out.put("_id", id);
        if (found.scoreDocs.length == 0) {
            out.put("matched", false);
            return out;
        }
        Explanation e = s.explain(query(idx, body.path("query")), found.scoreDocs[0].doc);
        out.put("matched", e.isMatch());
        out.set("explanation", explanation(e));
        return out;
    }

    static ObjectNode analyze(Idx idx, JsonNode body) throws IOException {
        Analyzer a;
        String field = body.path("field").asText("");
        if (body.has("analyzer")) {
            String name = body.get("analyzer").asText();
            a = idx != null ? idx.analyzers.get(name) : builtIn(name, null);
            if (a == null) throw bad("failed to find analyzer [" + name + "]");
        } else if (idx != null && !field.isEmpty()) {
            a = idx.analyzerOf(field);
        } else {
            a = builtIn("standard", null);
        }
        ObjectNode out = JSON.createObjectNode();
        ArrayNode tokens = out.putArray("tokens");
        try (TokenStream ts = a.tokenStream(field.isEmpty() ? "_analyze" : field, body.path("text").asText())) {
            CharTermAttribute term = ts.addAttribute(CharTermAttribute.class);
            OffsetAttribute offset = ts.addAttribute(OffsetAttribute.class);
            PositionIncrementAttribute inc = ts.addAttribute(PositionIncrementAttribute.class);
            ts.reset();
            int pos = -1;
            while (ts.incrementToken()) {
                pos += inc.getPositionIncrement();
                tokens.addObject().put("token", term.toString()).put("start_offset", offset.startOffset())
                        .put("end_offset", offset.endOffset()).put("position", pos);
            }
            ts.end();
        }
        return out;
    }

    static ObjectNode bulk(String defaultIndex, String text) throws IOException {
        ObjectNode out = JSON.createObjectNode();
        out.put("took", 1);
        out.put("errors", false);
        ArrayNode items = out.putArray("items");
        String[] lines = text.split("\n");
        Set<Idx> touched = new HashSet<>();
        for (int i = 0; i < lines.length; i++) {
            if (lines[i].isBlank()) continue;
            JsonNode action = JSON.readTree(lines[i]);
            String op = action.fieldNames().next();
            if (!op.equals("index")) throw bad("bulk action [" + op + "] is not served here");
            JsonNode meta = action.get(op);
            String index = meta.path("_index").asText(defaultIndex);
            Idx idx = need(index);
            String id = meta.path("_id").asText(null);
            if (id == null) throw bad("a bulk [index] action needs an [_id] here");
            idx.put(id, JSON.readTree(lines[++i]));
            touched.add(idx);
            items.addObject().putObject("index").put("_index", index).put("_id", id).put("status", 201);
        }
        for (Idx idx : touched) idx.writer.commit();
        return out;
    }

    static Idx need(String name) {
        Idx idx = INDEXES.get(name);
        if (idx == null) throw new Refused(404, "index_not_found_exception", "no such index [" + name + "]");
        return idx;
    }

    static ObjectNode stats(Idx idx) {
        ObjectNode out = JSON.createObjectNode();
        ObjectNode p = out.putObject("_all").putObject("primaries");
        p.putObject("docs").put("count", idx.reader.numDocs());
        p.putObject("indexing").put("index_total", idx.indexed);
        long bytes = 0;
        try {
            for (String f : idx.writer.getDirectory().listAll()) bytes += idx.writer.getDirectory().fileLength(f);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        p.putObject("store").put("size_in_bytes", bytes);
        return out;
    }

    static JsonNode route(String method, String path, Map<String, String> params, String text) throws IOException {
        List<String> parts = new ArrayList<>();
        for (String p : path.split("/")) if (!p.isEmpty()) parts.add(URLDecoder.decode(p, StandardCharsets.UTF_8));
        JsonNode body = text.isBlank() ? JSON.createObjectNode() : (path.endsWith("_bulk") ? null : JSON.readTree(text));
        if (parts.isEmpty() && method.equals("GET")) {
            ObjectNode out = JSON.createObjectNode();
            out.put("name", "lucene-node");
            out.putObject("version").put("distribution", "lucene-standin").put("number", "lucene-8.7.0");
            out.put("tagline", "a stand-in answering part of OpenSearch's REST API on Lucene");
            return out;
        }
        String first = parts.isEmpty() ? "" : parts.get(0);
        if (first.equals("_bulk") && method.equals("POST")) return bulk(null, text);
        if (first.equals("_analyze")) return analyze(null, body);
        if (first.equals("_search") && parts.size() == 2 && parts.get(1).equals("scroll")) {
            if (method.equals("DELETE")) {
                SCROLLS.remove(body.path("scroll_id").asText());
                return JSON.createObjectNode().put("succeeded", true);
            }
            String id = body.path("scroll_id").asText();
            Scroll s = SCROLLS.get(id);
            if (s == null) throw new Refused(404, "search_context_missing_exception", "no search context found");
            ObjectNode page = s.next();
            page.put("_scroll_id", id);
            return page;
        }
        if (first.startsWith("_")) throw bad("[" + method + " " + path + "] is not served here");
        if (parts.size() == 1) {
            switch (method) {
                case "PUT": {
                    if (INDEXES.containsKey(first))
                        throw new Refused(400, "resource_already_exists_exception", "index [" + first + "] already exists");
                    INDEXES.put(first, new Idx(first, body));
                    return JSON.createObjectNode().put("acknowledged", true).put("index", first);
                }
                case "HEAD": case "GET": need(first); return JSON.createObjectNode();
                case "DELETE": {
                    Idx idx = INDEXES.remove(first);
                    if (idx == null) need(first);
                    idx.writer.close();
                    return JSON.createObjectNode().put("acknowledged", true);
                }
            }
        }
        Idx idx = need(first);
        String op = parts.size() > 1 ? parts.get(1) : "";
        switch (op) {
            case "_bulk": return bulk(first, text);
            case "_refresh": idx.refresh(); return JSON.createObjectNode();
            case "_count": return JSON.createObjectNode().put("count", idx.searcher().count(
                    body.has("query") ? query(idx, body.get("query")) : new MatchAllDocsQuery()));
            case "_search": return search(idx, body, params);
            case "_explain": return explain(idx, parts.get(2), body);
            case "_analyze": return analyze(idx, body);
            case "_stats": return stats(idx);
            case "_mapping": {
                if (method.equals("PUT")) {
                    for (Iterator<String> it = body.fieldNames(); it.hasNext(); )
                        if (!it.next().equals("_meta")) throw bad("a mapping update is served here for [_meta] only");
                    idx.mappings.set("_meta", body.get("_meta"));
                    return JSON.createObjectNode().put("acknowledged", true);
                }
                ObjectNode out = JSON.createObjectNode();
                out.putObject(first).set("mappings", idx.mappings);
                return out;
            }
            case "_settings": {
                ObjectNode out = JSON.createObjectNode();
                out.putObject(first).putObject("settings").set("index", idx.settings);
                return out;
            }
            default: throw bad("[" + method + " " + path + "] is not served here");
        }
    }

    static void handle(HttpExchange ex) throws IOException {
        String method = ex.getRequestMethod();
        String path = ex.getRequestURI().getRawPath();
        Map<String, String> params = new HashMap<>();
        String rawQuery = ex.getRequestURI().getRawQuery();
        if (rawQuery != null)
            for (String kv : rawQuery.split("&")) {
                String[] p = kv.split("=", 2);
                params.put(p[0], p.length > 1 ? URLDecoder.decode(p[1], StandardCharsets.UTF_8) : "");
            }
        String text = new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
        synchronized (log) {
            log.println(method + " " + path + (rawQuery == null ? "" : "?" + rawQuery) + " " + text.replace('\n', ' '));
            log.flush();
        }
        int status = 200;
        JsonNode out;
        String auth = ex.getRequestHeaders().getFirst("Authorization");
        try {
            if (expectedAuth != null && !expectedAuth.equals(auth))
                throw new Refused(401, "security_exception", "missing authentication credentials for REST request [" + path + "]");
            out = route(method, path, params, text);
        } catch (Refused r) {
            status = r.status;
            ObjectNode err = JSON.createObjectNode();
            err.putObject("error").put("type", r.type).put("reason", r.getMessage());
            err.put("status", status);
            out = err;
        } catch (Exception e) {
            status = 500;
            ObjectNode err = JSON.createObjectNode();
            err.putObject("error").put("type", "exception").put("reason", String.valueOf(e));
            err.put("status", status);
            out = err;
        }
        byte[] bytes = JSON.writeValueAsBytes(out);
        ex.getResponseHeaders().add("Content-Type", "application/json; charset=UTF-8");
        if (method.equals("HEAD")) {
            ex.sendResponseHeaders(status, -1);
        } else {
            ex.sendResponseHeaders(status, bytes.length);
            ex.getResponseBody().write(bytes);
        }
        ex.close();
    }

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        log = new PrintWriter(new FileWriter(args[1], StandardCharsets.UTF_8, true));
        for (int i = 2; i + 1 < args.length; i += 2) {
            if (args[i].equals("--api-key")) expectedAuth = "ApiKey " + args[i + 1];
            else if (args[i].equals("--basic"))
                expectedAuth = "Basic " + Base64.getEncoder().encodeToString(args[i + 1].getBytes(StandardCharsets.UTF_8));
            else throw new IllegalArgumentException("unknown option " + args[i]);
        }
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 64);
        server.createContext("/", ex -> {
            try {
                handle(ex);
            } catch (Throwable t) {
                ex.close();
            }
        });
        server.setExecutor(Executors.newFixedThreadPool(4));
        server.start();
        System.out.println("listening " + server.getAddress().getPort());
        System.out.flush();
    }
}
