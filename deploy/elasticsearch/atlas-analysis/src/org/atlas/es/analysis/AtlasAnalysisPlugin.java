package org.atlas.es.analysis;

import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.regex.Pattern;

import org.apache.lucene.analysis.LowerCaseFilter;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.en.EnglishPossessiveFilter;
import org.apache.lucene.analysis.en.KStemFilter;
import org.apache.lucene.analysis.en.PorterStemFilter;
import org.apache.lucene.analysis.email.UAX29URLEmailTokenizer;
import org.apache.lucene.analysis.miscellaneous.ASCIIFoldingFilter;
import org.apache.lucene.analysis.pattern.PatternCaptureGroupTokenFilter;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.index.analysis.AbstractTokenFilterFactory;
import org.elasticsearch.index.analysis.TokenFilterFactory;
import org.elasticsearch.index.analysis.TokenizerFactory;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.plugins.AnalysisPlugin;
import org.elasticsearch.plugins.Plugin;

/**
 * The token filters and tokenizer Atlas needs from a cluster that ships without the
 * analysis-common module (the Maven test distribution of Elasticsearch).
 *
 * <p>The security system index defines an "email" analyzer (uax_url_email tokenizer with the
 * pattern_capture, lowercase and unique filters); without them the index cannot be created, and
 * so no API key can be stored. The English stemming filters are there for the memory indices.
 * Each is a thin wrapper over the Lucene class of the same behaviour.
 */
public final class AtlasAnalysisPlugin extends Plugin implements AnalysisPlugin {

    @Override
    public Map<String, AnalysisProvider<TokenFilterFactory>> getTokenFilters() {
        return Map.of(
            "pattern_capture", AnalysisPlugin.requiresAnalysisSettings(
                (indexSettings, env, name, settings) -> patternCapture(name, settings)),
            "lowercase", (indexSettings, env, name, settings) -> filter(name, LowerCaseFilter::new),
            "unique", (indexSettings, env, name, settings) ->
                filter(name, in -> new UniqueTokenFilter(in, settings.getAsBoolean("only_on_same_position", false))),
            "porter_stem", (indexSettings, env, name, settings) -> filter(name, PorterStemFilter::new),
            "kstem", (indexSettings, env, name, settings) -> filter(name, KStemFilter::new),
            "english_possessive", (indexSettings, env, name, settings) -> filter(name, EnglishPossessiveFilter::new),
            "asciifolding", (indexSettings, env, name, settings) -> filter(name, ASCIIFoldingFilter::new)
        );
    }

    @Override
    public Map<String, AnalysisProvider<TokenizerFactory>> getTokenizers() {
        return Map.of(
            "uax_url_email", (indexSettings, env, name, settings) -> {
                int maxTokenLength = settings.getAsInt("max_token_length", 255);
                return TokenizerFactory.newFactory(name, () -> {
                    UAX29URLEmailTokenizer tokenizer = new UAX29URLEmailTokenizer();
                    tokenizer.setMaxTokenLength(maxTokenLength);
                    return tokenizer;
                });
            }
        );
    }

    private static TokenFilterFactory filter(String name, Function<TokenStream, TokenStream> wrap) {
        return new AbstractTokenFilterFactory(name) {
            @Override
            public TokenStream create(TokenStream tokenStream) {
                return wrap.apply(tokenStream);
            }
        };
    }

    private static TokenFilterFactory patternCapture(String name, Settings settings) {
        List<String> regexes = settings.getAsList("patterns");
        if (regexes.isEmpty()) {
            throw new IllegalArgumentException("pattern_capture filter [" + name + "] needs [patterns]");
        }
        Pattern[] patterns = regexes.stream().map(Pattern::compile).toArray(Pattern[]::new);
        boolean preserveOriginal = settings.getAsBoolean("preserve_original", true);
        return filter(name, in -> new PatternCaptureGroupTokenFilter(in, preserveOriginal, patterns));
    }
}
