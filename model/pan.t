#ifdef PEG
struct T_SRC {
	char *fl; int ln;
} T_SRC[NTRANS];

void
tr_2_src(int m, char *file, int ln)
{	T_SRC[m].fl = file;
	T_SRC[m].ln = ln;
}

void
putpeg(int n, int m)
{	printf("%5d	trans %4d ", m, n);
	printf("%s:%d\n",
		T_SRC[n].fl, T_SRC[n].ln);
}
#endif

void
settable(void)
{	Trans *T;
	Trans *settr(int, int, int, int, int, char *, int, int, int);

	trans = (Trans ***) emalloc(7*sizeof(Trans **));

	/* proctype 5: liveness */

	trans[5] = (Trans **) emalloc(7*sizeof(Trans *));

	trans[5][4]	= settr(932,0,3,1,0,".(goto)", 0, 2, 0);
	T = trans[5][3] = settr(931,0,0,0,0,"DO", 0, 2, 0);
	    T->nxt	= settr(931,0,1,0,0,"DO", 0, 2, 0);
	trans[5][1]	= settr(929,0,3,3,0,"(!((((texts==1)||escalated)||(((!(rbClaimed)&&(texts==0))&&((js==2)||(js==3)))&&(lpc==0)))))", 1, 2, 0);
	trans[5][2]	= settr(930,0,3,1,0,"goto T0_init", 0, 2, 0);
	trans[5][5]	= settr(933,0,6,1,0,"break", 0, 2, 0);
	trans[5][6]	= settr(934,0,0,4,4,"-end-", 0, 3500, 0);

	/* proctype 4: safety */

	trans[4] = (Trans **) emalloc(11*sizeof(Trans *));

	trans[4][7]	= settr(925,0,6,1,0,".(goto)", 0, 2, 0);
	T = trans[4][6] = settr(924,0,0,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(924,0,3,0,0,"DO", 0, 2, 0);
	    T->nxt	= settr(924,0,4,0,0,"DO", 0, 2, 0);
	T = trans[ 4][3] = settr(921,2,0,0,0,"ATOMIC", 1, 2, 0);
	T->nxt	= settr(921,2,1,0,0,"ATOMIC", 1, 2, 0);
	trans[4][1]	= settr(919,0,6,5,5,"(!(((texts<=1)&&!((((((rbClaimed&&(texts==0))&&!(escalated))&&!((((ast==1)||(ast==2))||(ast==3))))&&((js==2)||(js==3)))&&(inAttempt==0))))))", 1, 2, 0); /* m: 2 -> 6,0 */
	reached4[2] = 1;
	trans[4][2]	= settr(0,0,0,0,0,"assert(!(!(((texts<=1)&&!((((((rbClaimed&&(texts==0))&&!(escalated))&&!((((ast==1)||(ast==2))||(ast==3))))&&((js==2)||(js==3)))&&(inAttempt==0)))))))",0,0,0);
	trans[4][4]	= settr(922,0,6,1,0,"(1)", 0, 2, 0);
	trans[4][5]	= settr(923,0,6,1,0,"goto T0_init", 0, 2, 0);
	trans[4][8]	= settr(926,0,9,1,0,"break", 0, 2, 0);
	trans[4][9]	= settr(927,0,10,1,0,"(1)", 0, 2, 0);
	trans[4][10]	= settr(928,0,0,6,6,"-end-", 0, 3500, 0);

	/* proctype 3: :init: */

	trans[3] = (Trans **) emalloc(7*sizeof(Trans *));

	T = trans[ 3][5] = settr(917,2,0,0,0,"ATOMIC", 0, 2, 0);
	T->nxt	= settr(917,2,1,0,0,"ATOMIC", 0, 2, 0);
	trans[3][1]	= settr(913,2,2,7,7,"(run Env())", 0, 2, 0);
	trans[3][2]	= settr(914,2,3,8,8,"(run Ringback(0))", 0, 2, 0);
	trans[3][3]	= settr(915,2,4,9,9,"(run Ringback(1))", 0, 2, 0);
	trans[3][4]	= settr(916,0,6,10,10,"(run Legacy())", 0, 2, 0);
	trans[3][6]	= settr(918,0,0,11,11,"-end-", 0, 3500, 0);

	/* proctype 2: Env */

	trans[2] = (Trans **) emalloc(36*sizeof(Trans *));

	trans[2][33]	= settr(910,0,32,1,0,".(goto)", 0, 2, 0);
	T = trans[2][32] = settr(909,0,0,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(909,0,3,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(909,0,7,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(909,0,10,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(909,0,13,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(909,0,16,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(909,0,19,0,0,"DO", 0, 2, 0);
	    T->nxt	= settr(909,0,31,0,0,"DO", 0, 2, 0);
/*->*/	trans[2][3]	= settr(880,32,32,12,12,"D_STEP451", 1, 2, 0);
/*->*/	trans[2][7]	= settr(884,32,32,13,13,"D_STEP454", 1, 2, 0);
/*->*/	trans[2][10]	= settr(887,32,32,14,14,"D_STEP456", 1, 2, 0);
/*->*/	trans[2][13]	= settr(890,32,32,15,15,"D_STEP466", 1, 2, 0);
/*->*/	trans[2][16]	= settr(893,32,32,16,16,"D_STEP468", 1, 2, 0);
/*->*/	trans[2][19]	= settr(896,32,32,17,17,"D_STEP470", 1, 2, 0);
/*->*/	trans[2][31]	= settr(908,32,32,18,18,"D_STEP473", 1, 2, 0);
	trans[2][34]	= settr(911,0,35,1,0,"break", 0, 2, 0);
	trans[2][35]	= settr(912,0,0,19,19,"-end-", 0, 3500, 0);

	/* proctype 1: Legacy */

	trans[1] = (Trans **) emalloc(135*sizeof(Trans *));

	trans[1][1]	= settr(744,0,2,20,20,"alive[2] = 1", 1, 2, 0);
	trans[1][2]	= settr(745,0,7,1,0,"(1)", 0, 2, 0);
/*->*/	trans[1][7]	= settr(750,32,21,21,21,"D_STEP402", 1, 2, 0);
/*->*/	trans[1][21]	= settr(764,32,26,22,22,"D_STEP403", 1, 2, 0);
	T = trans[1][26] = settr(769,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(769,0,22,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(769,0,24,0,0,"IF", 0, 2, 0);
	trans[1][22]	= settr(765,0,2,23,0,"((lpc==0))", 1, 2, 0);
	trans[1][23]	= settr(766,0,2,1,0,"goto end_lidle", 0, 2, 0);
	trans[1][27]	= settr(770,0,43,1,0,".(goto)", 0, 2, 0);
	trans[1][24]	= settr(767,0,25,2,0,"else", 0, 2, 0);
	trans[1][25]	= settr(768,0,43,1,0,"(1)", 0, 2, 0);
	T = trans[1][43] = settr(786,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(786,0,28,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(786,0,41,0,0,"IF", 0, 2, 0);
	trans[1][28]	= settr(771,0,40,24,0,"((crashes<2))", 1, 2, 0);
	T = trans[ 1][40] = settr(783,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(783,0,38,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[1][38]	= settr(781,32,130,25,25,"D_STEP388", 1, 2, 0);
	trans[1][39]	= settr(782,0,130,1,0,"goto end_ldead", 0, 2, 0);
	trans[1][44]	= settr(787,0,61,1,0,".(goto)", 0, 2, 0);
	trans[1][41]	= settr(784,0,42,1,0,"(1)", 0, 2, 0);
	trans[1][42]	= settr(785,0,61,1,0,"(1)", 0, 2, 0);
/*->*/	trans[1][61]	= settr(804,32,77,26,26,"D_STEP412", 1, 2, 0);
	T = trans[1][77] = settr(820,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(820,0,62,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(820,0,75,0,0,"IF", 0, 2, 0);
	trans[1][62]	= settr(805,0,74,27,0,"((crashes<2))", 1, 2, 0);
	T = trans[ 1][74] = settr(817,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(817,0,72,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[1][72]	= settr(815,32,130,28,28,"D_STEP388", 1, 2, 0);
	trans[1][73]	= settr(816,0,130,1,0,"goto end_ldead", 0, 2, 0);
	trans[1][78]	= settr(821,0,127,1,0,".(goto)", 0, 2, 0);
	trans[1][75]	= settr(818,0,76,1,0,"(1)", 0, 2, 0);
	trans[1][76]	= settr(819,0,127,1,0,"(1)", 0, 2, 0);
	T = trans[1][127] = settr(870,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(870,0,79,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(870,0,112,0,0,"IF", 0, 2, 0);
	trans[1][79]	= settr(822,0,86,29,29,"((lres==1))", 0, 2, 0);
/*->*/	trans[1][86]	= settr(829,32,102,30,30,"D_STEP424", 1, 2, 0);
	T = trans[1][102] = settr(845,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(845,0,87,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(845,0,100,0,0,"IF", 0, 2, 0);
	trans[1][87]	= settr(830,0,99,31,0,"((crashes<2))", 1, 2, 0);
	T = trans[ 1][99] = settr(842,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(842,0,97,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[1][97]	= settr(840,32,130,32,32,"D_STEP388", 1, 2, 0);
	trans[1][98]	= settr(841,0,130,1,0,"goto end_ldead", 0, 2, 0);
	trans[1][103]	= settr(846,0,111,1,0,".(goto)", 0, 2, 0);
	trans[1][100]	= settr(843,0,101,1,0,"(1)", 0, 2, 0);
	trans[1][101]	= settr(844,0,111,1,0,"(1)", 0, 2, 0);
/*->*/	trans[1][111]	= settr(854,32,2,33,33,"D_STEP426", 1, 2, 0);
	trans[1][128]	= settr(871,0,2,1,0,".(goto)", 0, 2, 0);
	trans[1][112]	= settr(855,0,126,34,34,"((lres!=1))", 0, 2, 0);
/*->*/	trans[1][126]	= settr(869,32,2,35,35,"D_STEP428", 1, 2, 0);
	trans[1][129]	= settr(872,0,2,1,0,"goto end_lidle", 0, 2, 0);
	trans[1][130]	= settr(873,0,132,1,0,"(1)", 0, 2, 0);
/*->*/	trans[1][132]	= settr(875,32,2,36,36,"D_STEP441", 1, 2, 0);
	trans[1][133]	= settr(876,0,2,1,0,"goto end_lidle", 0, 2, 0);
	trans[1][134]	= settr(0,0,0,0,0,"-end-",0,0,0);

	/* proctype 0: Ringback */

	trans[0] = (Trans **) emalloc(745*sizeof(Trans *));

	trans[0][1]	= settr(0,0,2,37,37,"alive[me] = 1", 1, 2, 0);
	trans[0][2]	= settr(1,0,69,1,0,"(1)", 0, 2, 0);
	trans[0][70]	= settr(69,0,69,1,0,".(goto)", 0, 2, 0);
	T = trans[0][69] = settr(68,0,0,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(68,0,10,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(68,0,30,0,0,"DO", 0, 2, 0);
	T = T->nxt	= settr(68,0,39,0,0,"DO", 0, 2, 0);
	    T->nxt	= settr(68,0,48,0,0,"DO", 0, 2, 0);
/*->*/	trans[0][10]	= settr(9,32,72,38,38,"D_STEP267", 1, 2, 0);
	trans[0][11]	= settr(10,0,72,1,0,"goto attempt", 0, 2, 0);
/*->*/	trans[0][30]	= settr(29,32,35,39,39,"D_STEP270", 1, 2, 0);
	T = trans[0][35] = settr(34,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(34,0,31,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(34,0,33,0,0,"IF", 0, 2, 0);
	trans[0][31]	= settr(30,0,72,40,0,"(jobless)", 0, 2, 0);
	trans[0][32]	= settr(31,0,72,1,0,"goto attempt", 0, 2, 0);
	trans[0][36]	= settr(35,0,69,1,0,".(goto)", 0, 2, 0);
	trans[0][33]	= settr(32,0,34,2,0,"else", 0, 2, 0);
	trans[0][34]	= settr(33,0,69,1,0,"(1)", 0, 2, 0);
/*->*/	trans[0][39]	= settr(38,32,46,41,41,"D_STEP302", 1, 2, 0);
	T = trans[0][46] = settr(45,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(45,0,43,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(45,0,44,0,0,"IF", 0, 2, 0);
/*->*/	trans[0][43]	= settr(42,32,69,42,42,"D_STEP303", 1, 2, 0);
	trans[0][47]	= settr(46,0,69,1,0,".(goto)", 0, 2, 0);
	trans[0][44]	= settr(43,0,45,1,0,"(1)", 0, 2, 0);
	trans[0][45]	= settr(44,0,69,1,0,"(1)", 0, 2, 0);
	trans[0][48]	= settr(47,0,68,43,0,"(((alive[me]&&!(rolledBack))&&(crashes<2)))", 1, 2, 0);
	T = trans[ 0][68] = settr(67,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(67,0,66,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][66]	= settr(65,32,736,44,44,"D_STEP228", 1, 2, 0);
	trans[0][67]	= settr(66,0,736,1,0,"goto end_dead", 0, 2, 0);
	trans[0][71]	= settr(70,0,72,1,0,"break", 0, 2, 0);
	trans[0][72]	= settr(71,0,73,45,45,"loops = 0", 0, 2, 0);
	trans[0][73]	= settr(72,0,158,46,46,"sup = 0", 0, 2, 0);
	T = trans[ 0][158] = settr(157,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(157,0,157,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][157]	= settr(156,32,159,47,47,"D_STEP135", 1, 2, 0);
	trans[0][159]	= settr(158,0,211,48,48,"sup = 0", 0, 2, 0); /* m: 160 -> 0,211 */
	reached0[160] = 1;
	trans[0][160]	= settr(0,0,0,0,0,"loops = (loops+1)",0,0,0);
	T = trans[0][211] = settr(210,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(210,0,161,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(210,0,184,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(210,0,207,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(210,0,209,0,0,"IF", 0, 2, 0);
	trans[0][161]	= settr(160,0,182,49,49,"((res==1))", 0, 2, 0);
	T = trans[ 0][182] = settr(181,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(181,0,181,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][181]	= settr(180,32,2,50,50,"D_STEP244", 1, 2, 0);
	trans[0][183]	= settr(182,0,2,1,0,"goto end_idle", 0, 2, 0);
	trans[0][212]	= settr(211,0,236,1,0,".(goto)", 0, 2, 0);
	trans[0][184]	= settr(183,0,205,51,51,"((res==2))", 0, 2, 0);
	T = trans[ 0][205] = settr(204,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(204,0,204,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][204]	= settr(203,32,2,52,52,"D_STEP244", 1, 2, 0);
	trans[0][206]	= settr(205,0,2,1,0,"goto end_idle", 0, 2, 0);
	trans[0][207]	= settr(206,0,236,53,53,"((res==3))", 0, 2, 0);
	trans[0][208]	= settr(207,0,236,1,0,"goto send", 0, 2, 0);
	trans[0][209]	= settr(208,0,568,54,0,"((res==4))", 0, 2, 0);
	trans[0][210]	= settr(209,0,568,1,0,"goto resolve", 0, 2, 0);
	T = trans[0][236] = settr(235,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(235,0,213,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(235,0,234,0,0,"IF", 0, 2, 0);
	trans[0][213]	= settr(212,0,233,55,0,"((crashes<2))", 1, 2, 0);
	T = trans[ 0][233] = settr(232,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(232,0,231,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][231]	= settr(230,32,736,56,56,"D_STEP228", 1, 2, 0);
	trans[0][232]	= settr(231,0,736,1,0,"goto end_dead", 0, 2, 0);
	trans[0][237]	= settr(236,0,259,1,0,".(goto)", 0, 2, 0);
	trans[0][234]	= settr(233,0,235,1,0,"(1)", 0, 2, 0);
	trans[0][235]	= settr(234,0,259,1,0,"(1)", 0, 2, 0);
/*->*/	trans[0][259]	= settr(258,32,283,57,57,"D_STEP322", 1, 2, 0);
	T = trans[0][283] = settr(282,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(282,0,260,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(282,0,281,0,0,"IF", 0, 2, 0);
	trans[0][260]	= settr(259,0,280,58,0,"((crashes<2))", 1, 2, 0);
	T = trans[ 0][280] = settr(279,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(279,0,278,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][278]	= settr(277,32,736,59,59,"D_STEP228", 1, 2, 0);
	trans[0][279]	= settr(278,0,736,1,0,"goto end_dead", 0, 2, 0);
	trans[0][284]	= settr(283,0,543,1,0,".(goto)", 0, 2, 0);
	trans[0][281]	= settr(280,0,282,1,0,"(1)", 0, 2, 0);
	trans[0][282]	= settr(281,0,543,1,0,"(1)", 0, 2, 0);
	T = trans[0][543] = settr(542,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(542,0,285,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(542,0,346,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(542,0,412,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(542,0,476,0,0,"IF", 0, 2, 0);
	trans[0][285]	= settr(284,0,297,60,60,"((ans==1))", 0, 2, 0);
	T = trans[ 0][297] = settr(296,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(296,0,296,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][296]	= settr(295,32,298,61,61,"D_STEP177", 1, 2, 0);
	trans[0][298]	= settr(297,0,322,62,62,"sending[me] = 0", 1, 2, 0);
	T = trans[0][322] = settr(321,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(321,0,299,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(321,0,320,0,0,"IF", 0, 2, 0);
	trans[0][299]	= settr(298,0,319,63,0,"((crashes<2))", 1, 2, 0);
	T = trans[ 0][319] = settr(318,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(318,0,317,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][317]	= settr(316,32,736,64,64,"D_STEP228", 1, 2, 0);
	trans[0][318]	= settr(317,0,736,1,0,"goto end_dead", 0, 2, 0);
	trans[0][323]	= settr(322,0,344,1,0,".(goto)", 0, 2, 0);
	trans[0][320]	= settr(319,0,321,1,0,"(1)", 0, 2, 0);
	trans[0][321]	= settr(320,0,344,1,0,"(1)", 0, 2, 0);
	T = trans[ 0][344] = settr(343,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(343,0,343,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][343]	= settr(342,32,2,65,65,"D_STEP244", 1, 2, 0);
	trans[0][345]	= settr(344,0,2,1,0,"goto end_idle", 0, 2, 0);
	trans[0][544]	= settr(543,0,568,1,0,".(goto)", 0, 2, 0);
	trans[0][346]	= settr(345,0,361,66,66,"((ans==2))", 0, 2, 0);
	T = trans[ 0][361] = settr(360,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(360,0,360,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][360]	= settr(359,32,362,67,67,"D_STEP187", 1, 2, 0);
	trans[0][362]	= settr(361,0,386,68,68,"sending[me] = 0", 1, 2, 0);
	T = trans[0][386] = settr(385,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(385,0,363,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(385,0,384,0,0,"IF", 0, 2, 0);
	trans[0][363]	= settr(362,0,383,69,0,"((crashes<2))", 1, 2, 0);
	T = trans[ 0][383] = settr(382,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(382,0,381,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][381]	= settr(380,32,736,70,70,"D_STEP228", 1, 2, 0);
	trans[0][382]	= settr(381,0,736,1,0,"goto end_dead", 0, 2, 0);
	trans[0][387]	= settr(386,0,389,1,0,".(goto)", 0, 2, 0);
	trans[0][384]	= settr(383,0,385,1,0,"(1)", 0, 2, 0);
	trans[0][385]	= settr(384,0,389,1,0,"(1)", 0, 2, 0);
/*->*/	trans[0][389]	= settr(388,32,410,71,71,"D_STEP342", 1, 2, 0);
	T = trans[ 0][410] = settr(409,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(409,0,409,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][409]	= settr(408,32,2,72,72,"D_STEP244", 1, 2, 0);
	trans[0][411]	= settr(410,0,2,1,0,"goto end_idle", 0, 2, 0);
	trans[0][412]	= settr(411,0,427,73,73,"(((ans==3)||(ans==6)))", 0, 2, 0);
	T = trans[ 0][427] = settr(426,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(426,0,426,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][426]	= settr(425,32,428,74,74,"D_STEP187", 1, 2, 0);
	trans[0][428]	= settr(427,0,452,75,75,"sending[me] = 0", 1, 2, 0);
	T = trans[0][452] = settr(451,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(451,0,429,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(451,0,450,0,0,"IF", 0, 2, 0);
	trans[0][429]	= settr(428,0,449,76,0,"((crashes<2))", 1, 2, 0);
	T = trans[ 0][449] = settr(448,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(448,0,447,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][447]	= settr(446,32,736,77,77,"D_STEP228", 1, 2, 0);
	trans[0][448]	= settr(447,0,736,1,0,"goto end_dead", 0, 2, 0);
	trans[0][453]	= settr(452,0,474,1,0,".(goto)", 0, 2, 0);
	trans[0][450]	= settr(449,0,451,1,0,"(1)", 0, 2, 0);
	trans[0][451]	= settr(450,0,474,1,0,"(1)", 0, 2, 0);
	T = trans[ 0][474] = settr(473,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(473,0,473,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][473]	= settr(472,32,2,78,78,"D_STEP244", 1, 2, 0);
	trans[0][475]	= settr(474,0,2,1,0,"goto end_idle", 0, 2, 0);
	trans[0][476]	= settr(475,0,494,79,79,"(((ans==4)||(ans==5)))", 0, 2, 0);
	T = trans[ 0][494] = settr(493,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(493,0,493,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][493]	= settr(492,32,495,80,80,"D_STEP210", 1, 2, 0);
	trans[0][495]	= settr(494,0,519,81,81,"sending[me] = 0", 1, 2, 0);
	T = trans[0][519] = settr(518,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(518,0,496,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(518,0,517,0,0,"IF", 0, 2, 0);
	trans[0][496]	= settr(495,0,516,82,0,"((crashes<2))", 1, 2, 0);
	T = trans[ 0][516] = settr(515,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(515,0,514,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][514]	= settr(513,32,736,83,83,"D_STEP228", 1, 2, 0);
	trans[0][515]	= settr(514,0,736,1,0,"goto end_dead", 0, 2, 0);
	trans[0][520]	= settr(519,0,541,1,0,".(goto)", 0, 2, 0);
	trans[0][517]	= settr(516,0,518,1,0,"(1)", 0, 2, 0);
	trans[0][518]	= settr(517,0,541,1,0,"(1)", 0, 2, 0);
	T = trans[ 0][541] = settr(540,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(540,0,540,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][540]	= settr(539,32,2,84,84,"D_STEP244", 1, 2, 0);
	trans[0][542]	= settr(541,0,2,1,0,"goto end_idle", 0, 2, 0);
	T = trans[0][568] = settr(567,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(567,0,545,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(567,0,566,0,0,"IF", 0, 2, 0);
	trans[0][545]	= settr(544,0,565,85,0,"((crashes<2))", 1, 2, 0);
	T = trans[ 0][565] = settr(564,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(564,0,563,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][563]	= settr(562,32,736,86,86,"D_STEP228", 1, 2, 0);
	trans[0][564]	= settr(563,0,736,1,0,"goto end_dead", 0, 2, 0);
	trans[0][569]	= settr(568,0,581,1,0,".(goto)", 0, 2, 0);
	trans[0][566]	= settr(565,0,567,1,0,"(1)", 0, 2, 0);
	trans[0][567]	= settr(566,0,581,1,0,"(1)", 0, 2, 0);
/*->*/	trans[0][581]	= settr(580,32,734,87,87,"D_STEP354", 1, 2, 0);
	T = trans[0][734] = settr(733,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(733,0,582,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(733,0,642,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(733,0,665,0,0,"IF", 0, 2, 0);
	trans[0][582]	= settr(581,0,594,88,88,"(found)", 0, 2, 0);
	T = trans[ 0][594] = settr(593,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(593,0,593,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][593]	= settr(592,32,618,89,89,"D_STEP177", 1, 2, 0);
	T = trans[0][618] = settr(617,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(617,0,595,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(617,0,616,0,0,"IF", 0, 2, 0);
	trans[0][595]	= settr(594,0,615,90,0,"((crashes<2))", 1, 2, 0);
	T = trans[ 0][615] = settr(614,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(614,0,613,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][613]	= settr(612,32,736,91,91,"D_STEP228", 1, 2, 0);
	trans[0][614]	= settr(613,0,736,1,0,"goto end_dead", 0, 2, 0);
	trans[0][619]	= settr(618,0,640,1,0,".(goto)", 0, 2, 0);
	trans[0][616]	= settr(615,0,617,1,0,"(1)", 0, 2, 0);
	trans[0][617]	= settr(616,0,640,1,0,"(1)", 0, 2, 0);
	T = trans[ 0][640] = settr(639,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(639,0,639,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][639]	= settr(638,32,2,92,92,"D_STEP244", 1, 2, 0);
	trans[0][641]	= settr(640,0,2,1,0,"goto end_idle", 0, 2, 0);
	trans[0][735]	= settr(734,0,736,1,0,".(goto)", 0, 2, 0);
	trans[0][642]	= settr(641,0,663,93,93,"((!(found)&&(res==0)))", 0, 2, 0);
	T = trans[ 0][663] = settr(662,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(662,0,662,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][662]	= settr(661,32,2,94,94,"D_STEP244", 1, 2, 0);
	trans[0][664]	= settr(663,0,2,1,0,"goto end_idle", 0, 2, 0);
	trans[0][665]	= settr(664,0,680,95,95,"((!(found)&&(res==1)))", 0, 2, 0);
	T = trans[ 0][680] = settr(679,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(679,0,679,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][679]	= settr(678,32,704,96,96,"D_STEP187", 1, 2, 0);
	T = trans[0][704] = settr(703,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(703,0,681,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(703,0,702,0,0,"IF", 0, 2, 0);
	trans[0][681]	= settr(680,0,701,97,0,"((crashes<2))", 1, 2, 0);
	T = trans[ 0][701] = settr(700,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(700,0,699,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][699]	= settr(698,32,736,98,98,"D_STEP228", 1, 2, 0);
	trans[0][700]	= settr(699,0,736,1,0,"goto end_dead", 0, 2, 0);
	trans[0][705]	= settr(704,0,706,1,0,".(goto)", 0, 2, 0); /* m: 706 -> 0,732 */
	reached0[706] = 1;
	trans[0][702]	= settr(701,0,703,1,0,"(1)", 0, 2, 0);
	trans[0][703]	= settr(702,0,732,99,99,"(1)", 0, 2, 0); /* m: 706 -> 732,0 */
	reached0[706] = 1;
	trans[0][706]	= settr(705,0,732,100,100,"sup = 0", 0, 2, 0);
	T = trans[0][732] = settr(731,0,0,0,0,"IF", 0, 2, 0);
	T = T->nxt	= settr(731,0,707,0,0,"IF", 0, 2, 0);
	    T->nxt	= settr(731,0,709,0,0,"IF", 0, 2, 0);
	trans[0][707]	= settr(706,0,158,101,0,"((loops<3))", 0, 2, 0);
	trans[0][708]	= settr(707,0,158,1,0,"goto claim", 0, 2, 0);
	trans[0][733]	= settr(732,0,736,1,0,".(goto)", 0, 2, 0);
	trans[0][709]	= settr(708,0,730,2,0,"else", 0, 2, 0);
	T = trans[ 0][730] = settr(729,0,0,0,0,"sub-sequence", 0, 2, 0);
	T->nxt	= settr(729,0,729,0,0,"sub-sequence", 0, 2, 0);
/*->*/	trans[0][729]	= settr(728,32,2,102,102,"D_STEP244", 1, 2, 0);
	trans[0][731]	= settr(730,0,2,1,0,"goto end_idle", 0, 2, 0);
	trans[0][736]	= settr(735,0,741,1,0,"(1)", 0, 2, 0);
	trans[0][742]	= settr(741,0,741,1,0,".(goto)", 0, 2, 0);
	T = trans[0][741] = settr(740,0,0,0,0,"DO", 0, 2, 0);
	    T->nxt	= settr(740,0,739,0,0,"DO", 0, 2, 0);
/*->*/	trans[0][739]	= settr(738,32,2,103,103,"D_STEP382", 1, 2, 0);
	trans[0][740]	= settr(739,0,2,1,0,"goto end_idle", 0, 2, 0);
	trans[0][743]	= settr(742,0,744,1,0,"break", 0, 2, 0);
	trans[0][744]	= settr(743,0,0,104,104,"-end-", 0, 3500, 0);
	/* np_ demon: */
	trans[_NP_] = (Trans **) emalloc(3*sizeof(Trans *));
	T = trans[_NP_][0] = settr(9997,0,1,_T5,0,"(np_)", 1,2,0);
	    T->nxt	  = settr(9998,0,0,_T2,0,"(1)",   0,2,0);
	T = trans[_NP_][1] = settr(9999,0,1,_T5,0,"(np_)", 1,2,0);
}

Trans *
settr(	int t_id, int a, int b, int c, int d,
	char *t, int g, int tpe0, int tpe1)
{	Trans *tmp = (Trans *) emalloc(sizeof(Trans));

	tmp->atom  = a&(6|32);	/* only (2|8|32) have meaning */
	if (!g) tmp->atom |= 8;	/* no global references */
	tmp->st    = b;
	tmp->tpe[0] = tpe0;
	tmp->tpe[1] = tpe1;
	tmp->tp    = t;
	tmp->t_id  = t_id;
	tmp->forw  = c;
	tmp->back  = d;
	return tmp;
}

Trans *
cpytr(Trans *a)
{	Trans *tmp = (Trans *) emalloc(sizeof(Trans));

	int i;
	tmp->atom  = a->atom;
	tmp->st    = a->st;
#ifdef HAS_UNLESS
	tmp->e_trans = a->e_trans;
	for (i = 0; i < HAS_UNLESS; i++)
		tmp->escp[i] = a->escp[i];
#endif
	tmp->tpe[0] = a->tpe[0];
	tmp->tpe[1] = a->tpe[1];
	for (i = 0; i < 6; i++)
	{	tmp->qu[i] = a->qu[i];
		tmp->ty[i] = a->ty[i];
	}
	tmp->tp    = (char *) emalloc(strlen(a->tp)+1);
	strcpy(tmp->tp, a->tp);
	tmp->t_id  = a->t_id;
	tmp->forw  = a->forw;
	tmp->back  = a->back;
	return tmp;
}

#ifndef NOREDUCE
int
srinc_set(int n)
{	if (n <= 2) return LOCAL;
	if (n <= 2+  DELTA) return Q_FULL_F; /* 's' or nfull  */
	if (n <= 2+2*DELTA) return Q_EMPT_F; /* 'r' or nempty */
	if (n <= 2+3*DELTA) return Q_EMPT_T; /* empty */
	if (n <= 2+4*DELTA) return Q_FULL_T; /* full  */
	if (n ==   5*DELTA) return GLOBAL;
	if (n ==   6*DELTA) return TIMEOUT_F;
	if (n ==   7*DELTA) return ALPHA_F;
	Uerror("cannot happen srinc_class");
	return BAD;
}
int
srunc(int n, int m)
{	switch(m) {
	case Q_FULL_F: return n-2;
	case Q_EMPT_F: return n-2-DELTA;
	case Q_EMPT_T: return n-2-2*DELTA;
	case Q_FULL_T: return n-2-3*DELTA;
	case ALPHA_F:
	case TIMEOUT_F: return 257; /* non-zero, and > MAXQ */
	}
	Uerror("cannot happen srunc");
	return 0;
}
#endif
int cnt;
#ifdef HAS_UNLESS
int
isthere(Trans *a, int b)
{	Trans *t;
	for (t = a; t; t = t->nxt)
		if (t->t_id == b)
			return 1;
	return 0;
}
#endif
#ifndef NOREDUCE
int
mark_safety(Trans *t) /* for conditional safety */
{	int g = 0, i, j, k;

	if (!t) return 0;
	if (t->qu[0])
		return (t->qu[1])?2:1;	/* marked */

	for (i = 0; i < 2; i++)
	{	j = srinc_set(t->tpe[i]);
		if (j >= GLOBAL && j != ALPHA_F)
			return -1;
		if (j != LOCAL)
		{	k = srunc(t->tpe[i], j);
			if (g == 0
			||  t->qu[0] != k
			||  t->ty[0] != j)
			{	t->qu[g] = k;
				t->ty[g] = j;
				g++;
	}	}	}
	return g;
}
#endif
void
retrans(int n, int m, int is, short srcln[], uchar reach[], uchar lpstate[])
	/* process n, with m states, is=initial state */
{	Trans *T0, *T1, *T2, *T3;
	Trans *T4, *T5; /* t_reverse or has_unless */
	int i;
#if defined(HAS_UNLESS) || !defined(NOREDUCE)
	int k;
#endif
#ifndef NOREDUCE
	int g, h, j, aa;
#endif
#ifdef HAS_UNLESS
	int p;
#endif
	if (state_tables >= 4)
	{	printf("STEP 1 %s\n", 
			procname[n]);
		for (i = 1; i < m; i++)
		for (T0 = trans[n][i]; T0; T0 = T0->nxt)
			crack(n, i, T0, srcln);
		return;
	}
	do {
		for (i = 1, cnt = 0; i < m; i++)
		{	T2 = trans[n][i];
			T1 = T2?T2->nxt:(Trans *)0;
/* prescan: */		for (T0 = T1; T0; T0 = T0->nxt)
/* choice in choice */	{	if (T0->st && trans[n][T0->st]
				&&  trans[n][T0->st]->nxt)
					break;
			}
#if 0
		if (T0)
		printf("\tstate %d / %d: choice in choice\n",
		i, T0->st);
#endif
			if (T0)
			for (T0 = T1; T0; T0 = T0->nxt)
			{	T3 = trans[n][T0->st];
				if (!T3->nxt)
				{	T2->nxt = cpytr(T0);
					T2 = T2->nxt;
					imed(T2, T0->st, n, i);
					continue;
				}
				do {	T3 = T3->nxt;
					T2->nxt = cpytr(T3);
					T2 = T2->nxt;
					imed(T2, T0->st, n, i);
				} while (T3->nxt);
				cnt++;
			}
		}
	} while (cnt);
	if (state_tables >= 3)
	{	printf("STEP 2 %s\n", 
			procname[n]);
		for (i = 1; i < m; i++)
		for (T0 = trans[n][i]; T0; T0 = T0->nxt)
			crack(n, i, T0, srcln);
		return;
	}
	for (i = 1; i < m; i++)
	{	if (trans[n][i] && trans[n][i]->nxt) /* optimize */
		{	T1 = trans[n][i]->nxt;
#if 0
			printf("\t\tpull %d (%d) to %d\n",
			T1->st, T1->forw, i);
#endif
			srcln[i] = srcln[T1->st];	/* Oyvind Teig, 5.2.0 */

			if (!trans[n][T1->st]) continue;
			T0 = cpytr(trans[n][T1->st]);
			trans[n][i] = T0;
			reach[T1->st] = 1;
			imed(T0, T1->st, n, i);
			for (T1 = T1->nxt; T1; T1 = T1->nxt)
			{
#if 0
			printf("\t\tpull %d (%d) to %d\n",
				T1->st, T1->forw, i);
#endif
		/*		srcln[i] = srcln[T1->st];  gh: not useful */
				if (!trans[n][T1->st]) continue;
				T0->nxt = cpytr(trans[n][T1->st]);
				T0 = T0->nxt;
				reach[T1->st] = 1;
				imed(T0, T1->st, n, i);
	}	}	}
	if (state_tables >= 2)
	{	printf("STEP 3 %s\n", 
			procname[n]);
		for (i = 1; i < m; i++)
		for (T0 = trans[n][i]; T0; T0 = T0->nxt)
			crack(n, i, T0, srcln);
		return;
	}
#ifdef HAS_UNLESS
	for (i = 1; i < m; i++)
	{	if (!trans[n][i]) continue;
		/* check for each state i if an
		 * escape to some state p is defined
		 * if so, copy and mark p's transitions
		 * and prepend them to the transition-
		 * list of state i
		 */
	 if (!like_java) /* the default */
	 {	for (T0 = trans[n][i]; T0; T0 = T0->nxt)
		for (k = HAS_UNLESS-1; k >= 0; k--)
		{	if (p = T0->escp[k])
			for (T1 = trans[n][p]; T1; T1 = T1->nxt)
			{	if (isthere(trans[n][i], T1->t_id))
					continue;
				T2 = cpytr(T1);
				T2->e_trans = p;
				T2->nxt = trans[n][i];
				trans[n][i] = T2;
		}	}
	 } else /* outermost unless checked first */
	 {	T4 = T3 = (Trans *) 0;
		for (T0 = trans[n][i]; T0; T0 = T0->nxt)
		for (k = HAS_UNLESS-1; k >= 0; k--)
		{	if (p = T0->escp[k])
			for (T1 = trans[n][p]; T1; T1 = T1->nxt)
			{	if (isthere(trans[n][i], T1->t_id))
					continue;
				T2 = cpytr(T1);
				T2->nxt = (Trans *) 0;
				T2->e_trans = p;
				if (T3)	T3->nxt = T2;
				else	T4 = T2;
				T3 = T2;
		}	}
		if (T4)
		{	T3->nxt = trans[n][i];
			trans[n][i] = T4;
		}
	 }
	}
#endif
#ifndef NOREDUCE
	for (i = 1; i < m; i++)
	{	if (a_cycles)
		{ /* moves through these states are visible */
	#if PROG_LAB>0 && defined(HAS_NP)
			if (progstate[n][i])
				goto degrade;
			for (T1 = trans[n][i]; T1; T1 = T1->nxt)
				if (progstate[n][T1->st])
					goto degrade;
	#endif
			if (accpstate[n][i] || visstate[n][i])
				goto degrade;
			for (T1 = trans[n][i]; T1; T1 = T1->nxt)
				if (accpstate[n][T1->st])
					goto degrade;
		}
		T1 = trans[n][i];
		if (!T1) continue;
		g = mark_safety(T1);	/* V3.3.1 */
		if (g < 0) goto degrade; /* global */
		/* check if mixing of guards preserves reduction */
		if (T1->nxt)
		{	k = 0;
			for (T0 = T1; T0; T0 = T0->nxt)
			{	if (!(T0->atom&8))
					goto degrade;
				for (aa = 0; aa < 2; aa++)
				{	j = srinc_set(T0->tpe[aa]);
					if (j >= GLOBAL && j != ALPHA_F)
						goto degrade;
					if (T0->tpe[aa]
					&&  T0->tpe[aa]
					!=  T1->tpe[0])
						k = 1;
			}	}
			/* g = 0;	V3.3.1 */
			if (k)	/* non-uniform selection */
			for (T0 = T1; T0; T0 = T0->nxt)
			for (aa = 0; aa < 2; aa++)
			{	j = srinc_set(T0->tpe[aa]);
				if (j != LOCAL)
				{	k = srunc(T0->tpe[aa], j);
					for (h = 0; h < 6; h++)
						if (T1->qu[h] == k
						&&  T1->ty[h] == j)
							break;
					if (h >= 6)
					{	T1->qu[g%6] = k;
						T1->ty[g%6] = j;
						g++;
			}	}	}
			if (g > 6)
			{	T1->qu[0] = 0;	/* turn it off */
				printf("pan: warning, line %d, ",
					srcln[i]);
			 	printf("too many stmnt types (%d)",
					g);
			  	printf(" in selection\n");
			  goto degrade;
			}
		}
		/* mark all options global if >=1 is global */
		for (T1 = trans[n][i]; T1; T1 = T1->nxt)
			if (!(T1->atom&8)) break;
		if (T1)
degrade:	for (T1 = trans[n][i]; T1; T1 = T1->nxt)
			T1->atom &= ~8;	/* mark as unsafe */
		/* can only mix 'r's or 's's if on same chan */
		/* and not mixed with other local operations */
		T1 = trans[n][i];
		if (!T1 || T1->qu[0]) continue;
		j = T1->tpe[0];
		if (T1->nxt && T1->atom&8)
		{ if (j == 5*DELTA)
		  {	printf("warning: line %d ", srcln[i]);
			printf("mixed condition ");
			printf("(defeats reduction)\n");
			goto degrade;
		  }
		  for (T0 = T1; T0; T0 = T0->nxt)
		  for (aa = 0; aa < 2; aa++)
		  if  (T0->tpe[aa] && T0->tpe[aa] != j)
		  {	printf("warning: line %d ", srcln[i]);
			printf("[%d-%d] mixed %stion ",
				T0->tpe[aa], j, 
				(j==5*DELTA)?"condi":"selec");
			printf("(defeats reduction)\n");
			printf("	'%s' <-> '%s'\n",
				T1->tp, T0->tp);
			goto degrade;
		} }
	}
#endif
	for (i = 1; i < m; i++)
	{	T2 = trans[n][i];
		if (!T2
		||  T2->nxt
		||  strncmp(T2->tp, ".(goto)", 7)
		||  !stopstate[n][i])
			continue;
		stopstate[n][T2->st] = 1;
	}
	if (state_tables && !verbose)
	{	if (dodot)
		{	char buf[256], *q = buf, *p = procname[n];
			while (*p != '\0')
			{	if (*p != ':')
				{	*q++ = *p;
				}
				p++;
			}
			*q = '\0';
			printf("digraph ");
			switch (Btypes[n]) {
			case I_PROC:  printf("init {\n"); break;
			case N_CLAIM: printf("claim_%s {\n", buf); break;
			case E_TRACE: printf("notrace {\n"); break;
			case N_TRACE: printf("trace {\n"); break;
			default:      printf("p_%s {\n", buf); break;
			}
			printf("size=\"8,10\";\n");
			printf("  GT [shape=box,style=dotted,label=\"%s\"];\n", buf);
			printf("  GT -> S%d;\n", is);
		} else
		{	switch (Btypes[n]) {
			case I_PROC:  printf("init\n"); break;
			case N_CLAIM: printf("claim %s\n", procname[n]); break;
			case E_TRACE: printf("notrace assertion\n"); break;
			case N_TRACE: printf("trace assertion\n"); break;
			default:      printf("proctype %s\n", procname[n]); break;
		}	}
		for (i = 1; i < m; i++)
		{	reach[i] = 1;
		}
		tagtable(n, m, is, srcln, reach);
		if (dodot) printf("}\n");
	} else
	for (i = 1; i < m; i++)
	{	int nrelse;
		if (Btypes[n] != N_CLAIM)
		{	for (T0 = trans[n][i]; T0; T0 = T0->nxt)
			{	if (T0->st == i
				&& strcmp(T0->tp, "(1)") == 0)
				{	printf("error: proctype '%s' ",
						procname[n]);
		  			printf("line %d, state %d: has un",
						srcln[i], i);
					printf("conditional self-loop\n");
					pan_exit(1);
		}	}	}
		nrelse = 0;
		for (T0 = trans[n][i]; T0; T0 = T0->nxt)
		{	if (strcmp(T0->tp, "else") == 0)
				nrelse++;
		}
		if (nrelse > 1)
		{	printf("error: proctype '%s' state",
				procname[n]);
		  	printf(" %d, inherits %d", i, nrelse);
		  	printf(" 'else' stmnts\n");
			pan_exit(1);
	}	}
#if !defined(LOOPSTATE) && !defined(BFS_PAR)
	if (state_tables)
#endif
	do_dfs(n, m, is, srcln, reach, lpstate);

	if (!t_reverse)
	{	return;
	}
	/* process n, with m states, is=initial state -- reverse list */
	if (!state_tables && Btypes[n] != N_CLAIM)
	{	for (i = 1; i < m; i++)
		{	Trans *Tx = (Trans *) 0; /* list of escapes */
			Trans *Ty = (Trans *) 0; /* its tail element */
			T1 = (Trans *) 0; /* reversed list */
			T2 = (Trans *) 0; /* its tail */
			T3 = (Trans *) 0; /* remembers possible 'else' */

			/* find unless-escapes, they should go first */
			T4 = T5 = T0 = trans[n][i];
	#ifdef HAS_UNLESS
			while (T4 && T4->e_trans) /* escapes are first in orig list */
			{	T5 = T4;	  /* remember predecessor */
				T4 = T4->nxt;
			}
	#endif
			/* T4 points to first non-escape, T5 to its parent, T0 to original list */
			if (T4 != T0)		 /* there was at least one escape */
			{	T3 = T5->nxt;		 /* start of non-escapes */
				T5->nxt = (Trans *) 0;	 /* separate */
				Tx = T0;		 /* start of the escapes */
				Ty = T5;		 /* its tail */
				T0 = T3;		 /* the rest, to be reversed */
			}
			/* T0 points to first non-escape, Tx to the list of escapes, Ty to its tail */

			/* first tail-add non-escape transitions, reversed */
			T3 = (Trans *) 0;
			for (T5 = T0; T5; T5 = T4)
			{	T4 = T5->nxt;
	#ifdef HAS_UNLESS
				if (T5->e_trans)
				{	printf("error: cannot happen!\n");
					continue;
				}
	#endif
				if (strcmp(T5->tp, "else") == 0)
				{	T3 = T5;
					T5->nxt = (Trans *) 0;
				} else
				{	T5->nxt = T1;
					if (!T1) { T2 = T5; }
					T1 = T5;
			}	}
			/* T3 points to a possible else, which is removed from the list */
			/* T1 points to the reversed list so far (without escapes) */
			/* T2 points to the tail element -- where the else should go */
			if (T2 && T3)
			{	T2->nxt = T3;	/* add else */
			} else
			{	if (T3) /* there was an else, but there's no tail */
				{	if (!T1)	/* and no reversed list */
					{	T1 = T3; /* odd, but possible */
					} else		/* even stranger */
					{	T1->nxt = T3;
			}	}	}

			/* add in the escapes, to that they appear at the front */
			if (Tx && Ty) { Ty->nxt = T1; T1 = Tx; }

			trans[n][i] = T1;
			/* reversed, with escapes first and else last */
	}	}
	if (state_tables && verbose)
	{	printf("FINAL proctype %s\n", 
			procname[n]);
		for (i = 1; i < m; i++)
		for (T0 = trans[n][i]; T0; T0 = T0->nxt)
			crack(n, i, T0, srcln);
	}
}
void
imed(Trans *T, int v, int n, int j)	/* set intermediate state */
{	progstate[n][T->st] |= progstate[n][v];
	accpstate[n][T->st] |= accpstate[n][v];
	stopstate[n][T->st] |= stopstate[n][v];
	mapstate[n][j] = T->st;
}
void
tagtable(int n, int m, int is, short srcln[], uchar reach[])
{	Trans *z;

	if (is >= m || !trans[n][is]
	||  is <= 0 || reach[is] == 0)
		return;
	reach[is] = 0;
	if (state_tables)
	for (z = trans[n][is]; z; z = z->nxt)
	{	if (dodot)
			dot_crack(n, is, z);
		else
			crack(n, is, z, srcln);
	}

	for (z = trans[n][is]; z; z = z->nxt)
	{
#ifdef HAS_UNLESS
		int i, j;
#endif
		tagtable(n, m, z->st, srcln, reach);
#ifdef HAS_UNLESS
		for (i = 0; i < HAS_UNLESS; i++)
		{	j = trans[n][is]->escp[i];
			if (!j) break;
			tagtable(n, m, j, srcln, reach);
		}
#endif
	}
}

extern Trans *t_id_lkup[];

void
dfs_table(int n, int m, int is, short srcln[], uchar reach[], uchar lpstate[])
{	Trans *z;

	if (is >= m || is <= 0 || !trans[n][is])
		return;
	if ((reach[is] & (4|8|16)) != 0)
	{	if ((reach[is] & (8|16)) == 16)	/* on stack, not yet recorded */
		{	lpstate[is] = 1;
			reach[is] |= 8; /* recorded */
			if (state_tables && verbose)
			{	printf("state %d line %d is a loopstate\n", is, srcln[is]);
		}	}
		return;
	}
	reach[is] |= (4|16);	/* visited | onstack */
	for (z = trans[n][is]; z; z = z->nxt)
	{	t_id_lkup[z->t_id] = z;
#ifdef HAS_UNLESS
		int i, j;
#endif
		dfs_table(n, m, z->st, srcln, reach, lpstate);
#ifdef HAS_UNLESS
		for (i = 0; i < HAS_UNLESS; i++)
		{	j = trans[n][is]->escp[i];
			if (!j) break;
			dfs_table(n, m, j, srcln, reach, lpstate);
		}
#endif
	}
	reach[is] &= ~16; /* no longer on stack */
}
void
do_dfs(int n, int m, int is, short srcln[], uchar reach[], uchar lpstate[])
{	int i;
	dfs_table(n, m, is, srcln, reach, lpstate);
	for (i = 0; i < m; i++)
		reach[i] &= ~(4|8|16);
}
void
crack(int n, int j, Trans *z, short srcln[])
{	int i;

	if (!z) return;
	printf("	state %3d -(tr %3d)-> state %3d  ",
		j, z->forw, z->st);
	printf("[id %3d tp %3d", z->t_id, z->tpe[0]);
	if (z->tpe[1]) printf(",%d", z->tpe[1]);
#ifdef HAS_UNLESS
	if (z->e_trans)
		printf(" org %3d", z->e_trans);
	else if (state_tables >= 2)
	for (i = 0; i < HAS_UNLESS; i++)
	{	if (!z->escp[i]) break;
		printf(" esc %d", z->escp[i]);
	}
#endif
	printf("]");
	printf(" [%s%s%s%s%s] %s:%d => ",
		z->atom&6?"A":z->atom&32?"D":"-",
		accpstate[n][j]?"a" :"-",
		stopstate[n][j]?"e" : "-",
		progstate[n][j]?"p" : "-",
		z->atom & 8 ?"L":"G",
		PanSource, srcln[j]);
	for (i = 0; z->tp[i]; i++)
		if (z->tp[i] == '\n')
			printf("\\n");
		else
			putchar(z->tp[i]);
	if (verbose && z->qu[0])
	{	printf("\t[");
		for (i = 0; i < 6; i++)
			if (z->qu[i])
				printf("(%d,%d)",
				z->qu[i], z->ty[i]);
		printf("]");
	}
	printf("\n");
	fflush(stdout);
}
/* spin -a m.pml; cc -o pan pan.c; ./pan -D | dot -Tps > foo.ps; ps2pdf foo.ps */
void
dot_crack(int n, int j, Trans *z)
{	int i;

	if (!z) return;
	printf("	S%d -> S%d  [color=black", j, z->st);

	if (z->atom&6) printf(",style=dashed");
	else if (z->atom&32) printf(",style=dotted");
	else if (z->atom&8) printf(",style=solid");
	else printf(",style=bold");

	printf(",label=\"");
	for (i = 0; z->tp[i]; i++)
	{	if (z->tp[i] == '\\'
		&&  z->tp[i+1] == 'n')
		{	i++; printf(" ");
		} else
		{	putchar(z->tp[i]);
	}	}
	printf("\"];\n");
	if (accpstate[n][j]) printf("  S%d [color=red,style=bold];\n", j);
	else if (progstate[n][j]) printf("  S%d [color=green,style=bold];\n", j);
	if (stopstate[n][j]) printf("  S%d [color=blue,style=bold,shape=box];\n", j);
}

#ifdef VAR_RANGES
#define BYTESIZE	32	/* 2^8 : 2^3 = 256:8 = 32 */

typedef struct Vr_Ptr {
	char	*nm;
	uchar	vals[BYTESIZE];
	struct Vr_Ptr *nxt;
} Vr_Ptr;
Vr_Ptr *ranges = (Vr_Ptr *) 0;

void
logval(char *s, int v)
{	Vr_Ptr *tmp;

	if (v<0 || v > 255) return;
	for (tmp = ranges; tmp; tmp = tmp->nxt)
		if (!strcmp(tmp->nm, s))
			goto found;
	tmp = (Vr_Ptr *) emalloc(sizeof(Vr_Ptr));
	tmp->nxt = ranges;
	ranges = tmp;
	tmp->nm = s;
found:
	tmp->vals[(v)/8] |= 1<<((v)%8);
}

void
dumpval(uchar X[], int range)
{	int w, x, i, j = -1;

	for (w = i = 0; w < range; w++)
	for (x = 0; x < 8; x++, i++)
	{
from:		if ((X[w] & (1<<x)))
		{	printf("%d", i);
			j = i;
			goto upto;
	}	}
	return;
	for (w = 0; w < range; w++)
	for (x = 0; x < 8; x++, i++)
	{
upto:		if (!(X[w] & (1<<x)))
		{	if (i-1 == j)
				printf(", ");
			else
				printf("-%d, ", i-1);
			goto from;
	}	}
	if (j >= 0 && j != 255)
		printf("-255");
}

void
dumpranges(void)
{	Vr_Ptr *tmp;
	printf("\nValues assigned within ");
	printf("interval [0..255]:\n");
	for (tmp = ranges; tmp; tmp = tmp->nxt)
	{	printf("\t%s\t: ", tmp->nm);
		dumpval(tmp->vals, BYTESIZE);
		printf("\n");
	}
}
#endif
