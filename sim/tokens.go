package sim

import "math"

// BytesPerToken is the divisor of the token counting rule (see CountTokens).
const BytesPerToken = 4

// ChatTemplateTokens is what each chat message adds to the prompt for the
// chat template (role markers and separators), on top of its content.
const ChatTemplateTokens = 4

// CountTokens is the simulator's tokenizer stand-in: ceil(len(s) / 4) where
// len is the length of s in UTF-8 bytes, and 0 for "". English text averages
// about four bytes per token with Llama-3's tokenizer, which is why the rule
// is close enough for load testing while costing nothing. The load generator
// builds prompts to a target token count with the same rule.
func CountTokens(s string) int { return (len(s) + BytesPerToken - 1) / BytesPerToken }

// ChatPromptTokens counts a chat prompt: the sum over messages of
// CountTokens(content) + ChatTemplateTokens.
func ChatPromptTokens(contents ...string) int {
	n := 0
	for _, c := range contents {
		n += CountTokens(c) + ChatTemplateTokens
	}
	return n
}

// vocabulary is the output vocabulary: 256 three-letter English words, each
// with a leading space, so that every token is exactly BytesPerToken bytes
// (CountTokens of an output equals its token count) and needs no JSON escaping.
var vocabulary = [256]string{
	" the", " and", " for", " are", " but", " not", " you", " all", " any", " can", " had", " her",
	" was", " one", " our", " out", " day", " get", " has", " him", " his", " how", " man", " new",
	" now", " old", " see", " two", " way", " who", " boy", " did", " its", " let", " put", " say",
	" she", " too", " use", " act", " add", " age", " ago", " aid", " aim", " air", " arm", " art",
	" ask", " bad", " bag", " bar", " bed", " bet", " big", " bit", " box", " bus", " buy", " car",
	" cat", " cow", " cry", " cup", " cut", " dog", " dry", " due", " ear", " eat", " egg", " end",
	" eye", " fan", " far", " fat", " few", " fit", " fix", " fly", " fog", " fun", " gas", " gun",
	" guy", " hat", " hit", " hot", " ice", " ill", " ink", " job", " joy", " key", " kid", " lab",
	" lad", " lap", " law", " lay", " leg", " lie", " lip", " lot", " low", " map", " mix", " mud",
	" net", " nor", " nut", " odd", " off", " oil", " own", " pan", " pay", " pen", " pet", " pie",
	" pig", " pin", " pot", " raw", " red", " rid", " row", " rub", " run", " sad", " sat", " sea",
	" set", " sir", " sit", " six", " sky", " son", " sun", " tax", " tea", " ten", " tie", " tip",
	" toe", " top", " toy", " try", " van", " war", " wet", " win", " yes", " yet", " zoo", " ant",
	" ape", " arc", " ash", " awe", " axe", " bat", " bay", " bee", " bin", " bog", " bow", " bud",
	" bug", " cab", " cap", " cod", " cub", " dam", " den", " dew", " dig", " dim", " dip", " doe",
	" dot", " dug", " dye", " eel", " elf", " elm", " emu", " fad", " fee", " fig", " fin", " fir",
	" fox", " fur", " gap", " gel", " gem", " gin", " gum", " gut", " hay", " hem", " hen", " hip",
	" hog", " hop", " hub", " hug", " hut", " ivy", " jam", " jar", " jaw", " jet", " jog", " jug",
	" keg", " kin", " kit", " lag", " lid", " log", " mad", " mat", " mob", " mop", " mug", " nap",
	" nod", " oak", " oar", " oat", " orb", " ore", " owl", " pad", " pal", " paw", " pea", " peg",
	" pub", " pun", " pup", " ram", " rat", " ray", " rib", " rim", " rip", " rod", " rot", " rug",
	" rum", " rye", " sag", " sap"}

// tokenText returns the text of token i (0-based) of the sequence whose
// token seed is seed: a counter-based draw, so any goroutine can compute any
// token without shared state and the same seed always gives the same text.
func tokenText(seed uint64, i int) string {
	return vocabulary[mix64(seed^(uint64(i)+1)*0x9e3779b97f4a7c15)&0xff]
}

// mix64 is SplitMix64's finaliser: a cheap, well-mixed 64-bit hash.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// unitFloat maps a 64-bit hash to [0, 1).
func unitFloat(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// drawOutputLength draws how many tokens a sequence produces before its
// end-of-sequence token: geometric with the given mean (the model emits EOS
// with probability 1/mean after each token), at least 1.
func drawOutputLength(seed uint64, mean int) int {
	if mean <= 1 {
		return 1
	}
	u := unitFloat(mix64(seed ^ 0x6c656e677468)) // "length"
	p := 1 / float64(mean)
	n := 1 + math.Floor(math.Log1p(-u)/math.Log1p(-p))
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(n)
}
