package workload

import (
	"math/rand/v2"
	"strings"
)

// Token estimation rule, shared with the simulator (`sim`): a string of n
// bytes counts as ceil(n/4) tokens, and a chat prompt counts each message
// as its content's tokens plus ChatMessageOverheadTokens (role and
// template). It is an approximation for building prompts of a target
// length; the server's usage.prompt_tokens stays authoritative.
const (
	BytesPerToken             = 4
	ChatMessageOverheadTokens = 4
)

// EstimateTokens returns the estimated token count of s: ceil(len(s)/4),
// with len in bytes.
func EstimateTokens(s string) int {
	return (len(s) + BytesPerToken - 1) / BytesPerToken
}

// EstimateChatTokens returns the estimated prompt tokens of a chat request:
// the sum over messages of EstimateTokens(content) + 4.
func EstimateChatTokens(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += EstimateTokens(m.Content) + ChatMessageOverheadTokens
	}
	return n
}

// promptCorpusBytes is the size of a PromptBuilder's text corpus. Prompts
// longer than this wrap around it.
const promptCorpusBytes = 512 << 10

// PromptBuilder makes synthetic prompts of an exact estimated token count.
// The text is plain ASCII English-like prose drawn from a small vocabulary,
// so that every byte is one character and a prompt of n tokens is exactly
// 4n bytes. Each prompt starts with a random tag and continues from a
// random word of a seeded 512 KiB corpus, so two prompts share a cached
// prefix only by chance (the tag alone differs in the first block of any
// prefix cache); shared prefixes are made on purpose by the workload.
//
// A PromptBuilder is immutable after NewPromptBuilder and safe for
// concurrent use; Build takes the caller's rng.
type PromptBuilder struct {
	corpus string
}

// NewPromptBuilder returns a builder whose corpus is drawn from rng, so the
// same seed gives the same prompts.
func NewPromptBuilder(rng *rand.Rand) *PromptBuilder {
	words := strings.Fields(promptVocabulary)
	var b strings.Builder
	b.Grow(promptCorpusBytes + 64)
	for b.Len() < promptCorpusBytes {
		n := 6 + rng.IntN(12) // words per sentence
		for i := range n {
			w := words[rng.IntN(len(words))]
			if i == 0 {
				b.WriteByte(w[0] - 'a' + 'A')
				b.WriteString(w[1:])
			} else {
				b.WriteString(w)
			}
			switch {
			case i == n-1:
				b.WriteString(". ")
			case rng.IntN(9) == 0:
				b.WriteString(", ")
			default:
				b.WriteByte(' ')
			}
		}
		if rng.IntN(6) == 0 {
			b.WriteByte('\n')
		}
	}
	return &PromptBuilder{corpus: b.String()}
}

// promptTagBytes is the length of the random tag that opens every prompt.
const promptTagBytes = 12

const promptTagAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// Build returns a prompt of exactly tokens estimated tokens (4·tokens
// bytes; "" for tokens ≤ 0), drawn with rng.
func (p *PromptBuilder) Build(rng *rand.Rand, tokens int) string {
	if tokens <= 0 {
		return ""
	}
	n := tokens * BytesPerToken
	var b strings.Builder
	b.Grow(n)
	// "[tag] " then prose; the tag alone varies the first prefix block.
	var tag [promptTagBytes]byte
	tag[0] = '['
	for i := 1; i < promptTagBytes-2; i++ {
		tag[i] = promptTagAlphabet[rng.IntN(len(promptTagAlphabet))]
	}
	tag[promptTagBytes-2], tag[promptTagBytes-1] = ']', ' '
	b.Write(tag[:min(n, promptTagBytes)])
	// Continue from a random word start of the corpus, wrapping around.
	off := rng.IntN(len(p.corpus))
	if i := strings.IndexByte(p.corpus[off:], ' '); i >= 0 {
		off += i + 1
	} else {
		off = 0
	}
	for b.Len() < n {
		chunk := p.corpus[off:]
		if rest := n - b.Len(); len(chunk) > rest {
			chunk = chunk[:rest]
		}
		b.WriteString(chunk)
		off = 0
	}
	return b.String()
}

// promptVocabulary is the word list synthetic prompts are drawn from:
// common English words of varied length (about five letters on average,
// close to real prose), all lower-case ASCII.
const promptVocabulary = `
the of and to in is that for it as was with be by on not he this are or his
from at which but have an they you were her she there been one all we their
has would when if so no will more can out up about into than them some could
other time these two may then do first any my now such like our over man me
even most made after also did many before must through back years where much
your way well down should because each just those people how too little state
good very make world still own see men work long get here between both life
being under never day same another know while last might us great old year
off come since against go came right used take three states himself few house
use during without again place american around however home small found thought
went say part once general high upon school every does got united left number
course war until always away something fact though water less public put think
almost hand enough far took head yet government system better set told nothing
night end why called didn't eyes find going look asked later knew point next
program city business give group toward young days let room president side
social given present several order national possible rather second face per
among form important often things looked early white case john become large
big need four within felt along children saw best church ever least power
development light thing seemed family interest want members mind country area
others although turned done open god service problem certain kind different
thus began door help means sense whole matter perhaps itself york times law
human line above name example action company hands local show whether five
history gave today either act feet across taken past quite anything seen
having death week experience body word half really field am car words already
themselves information tell together college shall money period held keep sure
probably free seems real behind cannot miss political air question making
office brought whose special heard major problems ago became federal moment
study available known result street economic boy position reason change south
board individual job areas society west close turn love community true court
force full seem am policy everything care table
`
