/* A game-score service: main replays a log of score events
 * (replay -> apply_event -> board_update -> board_insert) and keeps a
 * leaderboard of the best score of each player, sorted, so that the top
 * entries can be read at any time (top_report, every 4096 events). A
 * statistics pass (stats_pass: a histogram of every score seen) runs on
 * each event too.
 *
 * The bug (scalability): board_insert keeps the whole board as one sorted
 * array and inserts by shifting every lower entry (memmove), after a linear
 * search for the player's old entry; with few players it is cheap, with
 * many it is O(players) per event. The fix keeps a heap of the top entries
 * and an index by player. The normal input has 200 players, the buggy one
 * 1,500 (the same number of events); cfg_players is read from the input.
 *
 *   prog normal|buggy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define EVENTS 3000000
#define MAXPLAYERS 1500

struct entry {
	int player;
	int score;
};

struct event {
	int player;
	int points;
};

static struct entry board[MAXPLAYERS];
static int board_len;
static int best[MAXPLAYERS];
static unsigned long hist[1024];
int cfg_players;
static unsigned long report_sum;

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* board_insert is the root cause: a linear search and a shift per update. */
noinline void board_insert(int player, int score)
{
	int at = -1;
	for (int i = 0; i < board_len; i++)
		if (board[i].player == player) {
			at = i;
			break;
		}
	if (at >= 0) {
		memmove(&board[at], &board[at + 1], (size_t)(board_len - at - 1) * sizeof board[0]);
		board_len--;
	}
	int pos = 0;
	while (pos < board_len && board[pos].score >= score)
		pos++;
	memmove(&board[pos + 1], &board[pos], (size_t)(board_len - pos) * sizeof board[0]);
	board[pos].player = player;
	board[pos].score = score;
	board_len++;
}

noinline void board_update(int player, int score)
{
	if (score <= best[player])
		return;
	best[player] = score;
	board_insert(player, score);
}

noinline void stats_pass(int score)
{
	for (int k = 0; k < 96; k++)
		hist[(unsigned)(score + k * 7) & 1023]++;
}

noinline void apply_event(const struct event *e, int *scores)
{
	scores[e->player] += e->points;
	stats_pass(scores[e->player]);
	board_update(e->player, scores[e->player]);
}

noinline void top_report(void)
{
	for (int i = 0; i < 10 && i < board_len; i++)
		report_sum += (unsigned long)board[i].score;
}

noinline void replay(const struct event *ev, int n, int *scores)
{
	for (int i = 0; i < n; i++) {
		apply_event(&ev[i], scores);
		if ((i & 4095) == 0)
			top_report();
	}
}

int main(int argc, char **argv)
{
	int buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	cfg_players = buggy ? MAXPLAYERS : 200;
	struct event *ev = malloc(EVENTS * sizeof *ev);
	int *scores = calloc(MAXPLAYERS, sizeof *scores);
	if (!ev || !scores)
		return 1;
	uint64_t s = 7;
	for (int i = 0; i < EVENTS; i++) {
		ev[i].player = (int)(rng(&s) % (uint64_t)cfg_players);
		ev[i].points = 1 + (int)(rng(&s) % 50);
	}
	replay(ev, EVENTS, scores);
	printf("board %d, top sum %lu\n", board_len, report_sum);
	return 0;
}
