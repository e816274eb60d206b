#define rand	pan_rand
#define pthread_equal(a,b)	((a)==(b))
#if defined(HAS_CODE) && defined(VERBOSE)
	#ifdef BFS_PAR
		bfs_printf("Pr: %d Tr: %d\n", II, t->forw);
	#else
		cpu_printf("Pr: %d Tr: %d\n", II, t->forw);
	#endif
#endif
	switch (t->forw) {
	default: Uerror("bad forward move");
	case 0:	/* if without executable clauses */
		continue;
	case 1: /* generic 'goto' or 'skip' */
		IfNotBlocked
		_m = 3; goto P999;
	case 2: /* generic 'else' */
		IfNotBlocked
		if (trpt->o_pm&1) continue;
		_m = 3; goto P999;

		 /* CLAIM liveness */
	case 3: // STATE 1 - _spin_nvr.tmp:13 - [(!((((texts==1)||escalated)||(((!(rbClaimed)&&(texts==0))&&((js==2)||(js==3)))&&(lpc==0)))))] (0:0:0 - 1)
		
#if defined(VERI) && !defined(NP)
#if NCLAIMS>1
		{	static int reported1 = 0;
			if (verbose && !reported1)
			{	int nn = (int) ((Pclaim *)pptr(0))->_n;
				printf("depth %ld: Claim %s (%d), state %d (line %d)\n",
					depth, procname[spin_c_typ[nn]], nn, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported1 = 1;
				fflush(stdout);
		}	}
#else
		{	static int reported1 = 0;
			if (verbose && !reported1)
			{	printf("depth %d: Claim, state %d (line %d)\n",
					(int) depth, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported1 = 1;
				fflush(stdout);
		}	}
#endif
#endif
		reached[5][1] = 1;
		if (!( !((((((int)now.texts)==1)||((int)now.escalated))||((( !(((int)now.rbClaimed))&&(((int)now.texts)==0))&&((((int)now.js)==2)||(((int)now.js)==3)))&&(((int)now.lpc)==0))))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 4: // STATE 6 - _spin_nvr.tmp:15 - [-end-] (0:0:0 - 1)
		
#if defined(VERI) && !defined(NP)
#if NCLAIMS>1
		{	static int reported6 = 0;
			if (verbose && !reported6)
			{	int nn = (int) ((Pclaim *)pptr(0))->_n;
				printf("depth %ld: Claim %s (%d), state %d (line %d)\n",
					depth, procname[spin_c_typ[nn]], nn, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported6 = 1;
				fflush(stdout);
		}	}
#else
		{	static int reported6 = 0;
			if (verbose && !reported6)
			{	printf("depth %d: Claim, state %d (line %d)\n",
					(int) depth, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported6 = 1;
				fflush(stdout);
		}	}
#endif
#endif
		reached[5][6] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */

		 /* CLAIM safety */
	case 5: // STATE 1 - _spin_nvr.tmp:3 - [(!(((texts<=1)&&!((((((rbClaimed&&(texts==0))&&!(escalated))&&!((((ast==1)||(ast==2))||(ast==3))))&&((js==2)||(js==3)))&&(inAttempt==0))))))] (6:0:0 - 1)
		
#if defined(VERI) && !defined(NP)
#if NCLAIMS>1
		{	static int reported1 = 0;
			if (verbose && !reported1)
			{	int nn = (int) ((Pclaim *)pptr(0))->_n;
				printf("depth %ld: Claim %s (%d), state %d (line %d)\n",
					depth, procname[spin_c_typ[nn]], nn, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported1 = 1;
				fflush(stdout);
		}	}
#else
		{	static int reported1 = 0;
			if (verbose && !reported1)
			{	printf("depth %d: Claim, state %d (line %d)\n",
					(int) depth, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported1 = 1;
				fflush(stdout);
		}	}
#endif
#endif
		reached[4][1] = 1;
		if (!( !(((((int)now.texts)<=1)&& !((((((((int)now.rbClaimed)&&(((int)now.texts)==0))&& !(((int)now.escalated)))&& !((((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3))))&&((((int)now.js)==2)||(((int)now.js)==3)))&&(((int)now.inAttempt)==0)))))))
			continue;
		/* merge: assert(!(!(((texts<=1)&&!((((((rbClaimed&&(texts==0))&&!(escalated))&&!((((ast==1)||(ast==2))||(ast==3))))&&((js==2)||(js==3)))&&(inAttempt==0)))))))(0, 2, 6) */
		reached[4][2] = 1;
		spin_assert( !( !(((((int)now.texts)<=1)&& !((((((((int)now.rbClaimed)&&(((int)now.texts)==0))&& !(((int)now.escalated)))&& !((((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3))))&&((((int)now.js)==2)||(((int)now.js)==3)))&&(((int)now.inAttempt)==0)))))), " !( !(((texts<=1)&& !((((((rbClaimed&&(texts==0))&& !(escalated))&& !((((ast==1)||(ast==2))||(ast==3))))&&((js==2)||(js==3)))&&(inAttempt==0))))))", II, tt, t);
		/* merge: .(goto)(0, 7, 6) */
		reached[4][7] = 1;
		;
		_m = 3; goto P999; /* 2 */
	case 6: // STATE 10 - _spin_nvr.tmp:8 - [-end-] (0:0:0 - 1)
		
#if defined(VERI) && !defined(NP)
#if NCLAIMS>1
		{	static int reported10 = 0;
			if (verbose && !reported10)
			{	int nn = (int) ((Pclaim *)pptr(0))->_n;
				printf("depth %ld: Claim %s (%d), state %d (line %d)\n",
					depth, procname[spin_c_typ[nn]], nn, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported10 = 1;
				fflush(stdout);
		}	}
#else
		{	static int reported10 = 0;
			if (verbose && !reported10)
			{	printf("depth %d: Claim, state %d (line %d)\n",
					(int) depth, (int) ((Pclaim *)pptr(0))->_p, src_claim[ (int) ((Pclaim *)pptr(0))->_p ]);
				reported10 = 1;
				fflush(stdout);
		}	}
#endif
#endif
		reached[4][10] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */

		 /* PROC :init: */
	case 7: // STATE 1 - window.pml:488 - [(run Env())] (0:0:0 - 1)
		IfNotBlocked
		reached[3][1] = 1;
		if (!(addproc(II, 1, 2, 0)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 8: // STATE 2 - window.pml:489 - [(run Ringback(0))] (0:0:0 - 1)
		IfNotBlocked
		reached[3][2] = 1;
		if (!(addproc(II, 1, 0, 0)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 9: // STATE 3 - window.pml:490 - [(run Ringback(1))] (0:0:0 - 1)
		IfNotBlocked
		reached[3][3] = 1;
		if (!(addproc(II, 1, 0, 1)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 10: // STATE 4 - window.pml:491 - [(run Legacy())] (0:0:0 - 1)
		IfNotBlocked
		reached[3][4] = 1;
		if (!(addproc(II, 1, 1, 0)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 11: // STATE 6 - window.pml:493 - [-end-] (0:0:0 - 1)
		IfNotBlocked
		reached[3][6] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */

		 /* PROC Env */
	case 12: // STATE 3 - window.pml:451 - [D_STEP451]
		if (!(boq == -1 && ((((((int)now.ast)==1)&& !(((int)now.aged)))&& !((((int)now.sending[0])&&(((int)now.tok[0])==((int)now.atok)))))&& !((((int)now.sending[1])&&(((int)now.tok[1])==((int)now.atok)))))))
			continue;

		reached[2][3] = 1;
		reached[2][t->st] = 1;
		reached[2][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_878_0: /* 2 */
		if (!(((((((int)now.ast)==1)&& !(((int)now.aged)))&& !((((int)now.sending[0])&&(((int)now.tok[0])==((int)now.atok)))))&& !((((int)now.sending[1])&&(((int)now.tok[1])==((int)now.atok)))))))
			Uerror("block in d_step seq");
S_879_0: /* 2 */
		now.aged = 1;
#ifdef VAR_RANGES
		logval("aged", ((int)now.aged));
#endif
		;
		goto S_910_0;
S_910_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 13: // STATE 7 - window.pml:454 - [D_STEP454]
		if (!(boq == -1 && ((((((int)now.C)==2)&&((int)now.cshort))&&((int)now.aged))&&(((int)now.ctok)==((int)now.atok)))))
			continue;

		reached[2][7] = 1;
		reached[2][t->st] = 1;
		reached[2][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_881_0: /* 2 */
		if (!(((((((int)now.C)==2)&&((int)now.cshort))&&((int)now.aged))&&(((int)now.ctok)==((int)now.atok)))))
			Uerror("block in d_step seq");
S_882_0: /* 2 */
		now.C = 0;
#ifdef VAR_RANGES
		logval("C", ((int)now.C));
#endif
		;
S_883_0: /* 2 */
		now.cshort = 0;
#ifdef VAR_RANGES
		logval("cshort", ((int)now.cshort));
#endif
		;
		goto S_910_0; /* ';' */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 14: // STATE 10 - window.pml:456 - [D_STEP456]
		if (!(boq == -1 && ((((((int)now.C)==2)&& !(((int)now.cshort)))&& !(((int)now.alive[0])))&& !(((int)now.alive[1])))))
			continue;

		reached[2][10] = 1;
		reached[2][t->st] = 1;
		reached[2][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_885_0: /* 2 */
		if (!(((((((int)now.C)==2)&& !(((int)now.cshort)))&& !(((int)now.alive[0])))&& !(((int)now.alive[1])))))
			Uerror("block in d_step seq");
S_886_0: /* 2 */
		now.C = 0;
#ifdef VAR_RANGES
		logval("C", ((int)now.C));
#endif
		;
		goto S_910_0; /* ';' */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 15: // STATE 13 - window.pml:466 - [D_STEP466]
		if (!(boq == -1 && (((((int)now.C)==1)&&(((int)now.lpc)==0))&&((((int)now.js)==2)||(((int)now.js)==3)))))
			continue;

		reached[2][13] = 1;
		reached[2][t->st] = 1;
		reached[2][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_888_0: /* 2 */
		if (!((((((int)now.C)==1)&&(((int)now.lpc)==0))&&((((int)now.js)==2)||(((int)now.js)==3)))))
			Uerror("block in d_step seq");
S_889_0: /* 2 */
		now.C = 0;
#ifdef VAR_RANGES
		logval("C", ((int)now.C));
#endif
		;
		goto S_910_0; /* ';' */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 16: // STATE 16 - window.pml:468 - [D_STEP468]
		if (!(boq == -1 && (((((int)now.ast)==2)&& !(((int)now.rwin)))&&(((int)now.lpc)!=1))))
			continue;

		reached[2][16] = 1;
		reached[2][t->st] = 1;
		reached[2][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_891_0: /* 2 */
		if (!((((((int)now.ast)==2)&& !(((int)now.rwin)))&&(((int)now.lpc)!=1))))
			Uerror("block in d_step seq");
S_892_0: /* 2 */
		now.rwin = 1;
#ifdef VAR_RANGES
		logval("rwin", ((int)now.rwin));
#endif
		;
		goto S_910_0; /* ';' */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 17: // STATE 19 - window.pml:470 - [D_STEP470]
		if (!(boq == -1 && ((((int)now.texts)>0)&& !(((int)now.R)))))
			continue;

		reached[2][19] = 1;
		reached[2][t->st] = 1;
		reached[2][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_894_0: /* 2 */
		if (!(((((int)now.texts)>0)&& !(((int)now.R)))))
			Uerror("block in d_step seq");
S_895_0: /* 2 */
		now.R = 1;
#ifdef VAR_RANGES
		logval("R", ((int)now.R));
#endif
		;
		goto S_910_0; /* ';' */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 18: // STATE 31 - window.pml:473 - [D_STEP473]
		if (!(boq == -1 && ((((int)now.js)==1)&&((int)now.lockDead))))
			continue;

		reached[2][31] = 1;
		reached[2][t->st] = 1;
		reached[2][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_897_0: /* 2 */
		if (!(((((int)now.js)==1)&&((int)now.lockDead))))
			Uerror("block in d_step seq");
S_898_0: /* 2 */
		now.stc = (((int)now.stc)+1);
#ifdef VAR_RANGES
		logval("stc", ((int)now.stc));
#endif
		;
S_899_0: /* 2 */
		now.lockDead = 0;
#ifdef VAR_RANGES
		logval("lockDead", ((int)now.lockDead));
#endif
		;
S_900_0: /* 2 */
		now.holder = 3;
#ifdef VAR_RANGES
		logval("holder", ((int)now.holder));
#endif
		;
S_906_0: /* 2 */
S_901_0: /* 2 */
		if (!((((int)now.stc)>1)))
			goto S_906_1;
S_902_0: /* 2 */
		now.js = 3;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
S_903_0: /* 2 */
		stallFailed = 1;
#ifdef VAR_RANGES
		logval("stallFailed", ((int)stallFailed));
#endif
		;
		goto S_907_0;
S_906_1: /* 3 */
S_904_0: /* 2 */
		/* else */;
S_905_0: /* 2 */
		now.js = 0;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_907_0;
S_906_2: /* 3 */
		Uerror("blocking sel in d_step (nr.0, near line 475)");
S_907_0: /* 2 */
		goto S_910_0; /* '.' */
		goto S_910_0; /* ';' */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 19: // STATE 35 - window.pml:484 - [-end-] (0:0:0 - 1)
		IfNotBlocked
		reached[2][35] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */

		 /* PROC Legacy */
	case 20: // STATE 1 - window.pml:398 - [alive[2] = 1] (0:0:1 - 1)
		IfNotBlocked
		reached[1][1] = 1;
		(trpt+1)->bup.oval = ((int)now.alive[2]);
		now.alive[2] = 1;
#ifdef VAR_RANGES
		logval("alive[2]", ((int)now.alive[2]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 21: // STATE 7 - window.pml:402 - [D_STEP402]
		if (!(boq == -1 && (((int)now.alive[2])&&(((int)now.js)==0))))
			continue;

		reached[1][7] = 1;
		reached[1][t->st] = 1;
		reached[1][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_746_0: /* 2 */
		if (!((((int)now.alive[2])&&(((int)now.js)==0))))
			Uerror("block in d_step seq");
S_747_0: /* 2 */
		now.js = 1;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
S_748_0: /* 2 */
		now.holder = 2;
#ifdef VAR_RANGES
		logval("holder", ((int)now.holder));
#endif
		;
S_749_0: /* 2 */
		now.lockDead = 0;
#ifdef VAR_RANGES
		logval("lockDead", ((int)now.lockDead));
#endif
		;
		goto S_764_0;
S_764_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 22: // STATE 21 - window.pml:403 - [D_STEP403]
		if (!(((boq == -1 && (((int)now.C)==0))) || (boq == -1 /* else */)))
			continue;

		reached[1][21] = 1;
		reached[1][t->st] = 1;
		reached[1][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_762_0: /* 2 */
S_751_0: /* 2 */
		if (!((((int)now.C)==0)))
			goto S_762_1;
S_752_0: /* 2 */
		now.C = 1;
#ifdef VAR_RANGES
		logval("C", ((int)now.C));
#endif
		;
S_753_0: /* 2 */
		now.lpc = 1;
#ifdef VAR_RANGES
		logval("lpc", ((int)now.lpc));
#endif
		;
		goto S_763_0;
S_762_1: /* 3 */
S_754_0: /* 2 */
		/* else */;
S_755_0: /* 2 */
		now.lpc = 0;
#ifdef VAR_RANGES
		logval("lpc", ((int)now.lpc));
#endif
		;
S_760_0: /* 2 */
S_756_0: /* 2 */
		if (!((((((int)now.js)==1)&&(((int)now.holder)==2))&& !(((int)now.lockDead)))))
			goto S_760_1;
S_757_0: /* 2 */
		now.js = 2;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_761_0;
S_760_1: /* 3 */
S_758_0: /* 2 */
		/* else */;
S_759_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_761_0;
S_760_2: /* 3 */
		Uerror("blocking sel in d_step (nr.1, near line 407)");
S_761_0: /* 2 */
		goto S_763_0;
S_762_2: /* 3 */
		Uerror("blocking sel in d_step (nr.2, near line 404)");
S_763_0: /* 2 */
		goto S_769_0;
S_769_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 23: // STATE 22 - window.pml:410 - [((lpc==0))] (0:0:0 - 1)
		IfNotBlocked
		reached[1][22] = 1;
		if (!((((int)now.lpc)==0)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 24: // STATE 28 - window.pml:411 - [((crashes<2))] (0:0:0 - 1)
		IfNotBlocked
		reached[1][28] = 1;
		if (!((((int)now.crashes)<2)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 25: // STATE 38 - window.pml:388 - [D_STEP388]
		IfNotBlocked

		reached[1][38] = 1;
		reached[1][t->st] = 1;
		reached[1][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_772_0: /* 2 */
		now.alive[2] = 0;
#ifdef VAR_RANGES
		logval("alive[2]", ((int)now.alive[2]));
#endif
		;
S_773_0: /* 2 */
		now.crashes = (((int)now.crashes)+1);
#ifdef VAR_RANGES
		logval("crashes", ((int)now.crashes));
#endif
		;
S_774_0: /* 2 */
		now.lpc = 0;
#ifdef VAR_RANGES
		logval("lpc", ((int)now.lpc));
#endif
		;
S_779_0: /* 2 */
S_775_0: /* 2 */
		if (!(((((int)now.js)==1)&&(((int)now.holder)==2))))
			goto S_779_1;
S_776_0: /* 2 */
		now.lockDead = 1;
#ifdef VAR_RANGES
		logval("lockDead", ((int)now.lockDead));
#endif
		;
		goto S_780_0;
S_779_1: /* 3 */
S_777_0: /* 2 */
		/* else */;
S_778_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_780_0;
S_779_2: /* 3 */
		Uerror("blocking sel in d_step (nr.3, near line 390)");
S_780_0: /* 2 */
		goto S_782_0;
S_782_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 26: // STATE 61 - window.pml:412 - [D_STEP412]
		if (!(((boq == -1 && (((int)now.errs)<2))) || ((boq == -1 && (((int)now.errs)<2)))))
			continue;

		reached[1][61] = 1;
		reached[1][t->st] = 1;
		reached[1][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_795_0: /* 2 */
S_788_0: /* 2 */
		((P1 *)_this)->lres = 1;
#ifdef VAR_RANGES
		logval("Legacy:lres", ((int)((P1 *)_this)->lres));
#endif
		;
		goto S_796_0;
S_795_1: /* 3 */
S_789_0: /* 2 */
		if (!((((int)now.errs)<2)))
			goto S_795_2;
S_790_0: /* 2 */
		now.errs = (((int)now.errs)+1);
#ifdef VAR_RANGES
		logval("errs", ((int)now.errs));
#endif
		;
S_791_0: /* 2 */
		((P1 *)_this)->lres = 2;
#ifdef VAR_RANGES
		logval("Legacy:lres", ((int)((P1 *)_this)->lres));
#endif
		;
		goto S_796_0;
S_795_2: /* 3 */
S_792_0: /* 2 */
		if (!((((int)now.errs)<2)))
			goto S_795_3;
S_793_0: /* 2 */
		now.errs = (((int)now.errs)+1);
#ifdef VAR_RANGES
		logval("errs", ((int)now.errs));
#endif
		;
S_794_0: /* 2 */
		((P1 *)_this)->lres = 3;
#ifdef VAR_RANGES
		logval("Legacy:lres", ((int)((P1 *)_this)->lres));
#endif
		;
		goto S_796_0;
S_795_3: /* 3 */
		Uerror("blocking sel in d_step (nr.4, near line 413)");
S_796_0: /* 2 */
S_801_0: /* 2 */
S_797_0: /* 2 */
		if (!((((int)((P1 *)_this)->lres)!=2)))
			goto S_801_1;
S_798_0: /* 2 */
		now.texts = (((int)now.texts)+1);
#ifdef VAR_RANGES
		logval("texts", ((int)now.texts));
#endif
		;
		goto S_802_0;
S_801_1: /* 3 */
S_799_0: /* 2 */
		/* else */;
S_800_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_802_0;
S_801_2: /* 3 */
		Uerror("blocking sel in d_step (nr.5, near line 418)");
S_802_0: /* 2 */
S_803_0: /* 2 */
		now.lpc = 2;
#ifdef VAR_RANGES
		logval("lpc", ((int)now.lpc));
#endif
		;
		goto S_820_0;
S_820_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 27: // STATE 62 - window.pml:421 - [((crashes<2))] (0:0:0 - 1)
		IfNotBlocked
		reached[1][62] = 1;
		if (!((((int)now.crashes)<2)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 28: // STATE 72 - window.pml:388 - [D_STEP388]
		IfNotBlocked

		reached[1][72] = 1;
		reached[1][t->st] = 1;
		reached[1][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_806_0: /* 2 */
		now.alive[2] = 0;
#ifdef VAR_RANGES
		logval("alive[2]", ((int)now.alive[2]));
#endif
		;
S_807_0: /* 2 */
		now.crashes = (((int)now.crashes)+1);
#ifdef VAR_RANGES
		logval("crashes", ((int)now.crashes));
#endif
		;
S_808_0: /* 2 */
		now.lpc = 0;
#ifdef VAR_RANGES
		logval("lpc", ((int)now.lpc));
#endif
		;
S_813_0: /* 2 */
S_809_0: /* 2 */
		if (!(((((int)now.js)==1)&&(((int)now.holder)==2))))
			goto S_813_1;
S_810_0: /* 2 */
		now.lockDead = 1;
#ifdef VAR_RANGES
		logval("lockDead", ((int)now.lockDead));
#endif
		;
		goto S_814_0;
S_813_1: /* 3 */
S_811_0: /* 2 */
		/* else */;
S_812_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_814_0;
S_813_2: /* 3 */
		Uerror("blocking sel in d_step (nr.6, near line 390)");
S_814_0: /* 2 */
		goto S_816_0;
S_816_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 29: // STATE 79 - window.pml:423 - [((lres==1))] (0:0:1 - 1)
		IfNotBlocked
		reached[1][79] = 1;
		if (!((((int)((P1 *)_this)->lres)==1)))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: lres */  (trpt+1)->bup.oval = ((P1 *)_this)->lres;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P1 *)_this)->lres = 0;
		_m = 3; goto P999; /* 0 */
	case 30: // STATE 86 - window.pml:424 - [D_STEP424]
		if (!(((boq == -1 && (((int)now.C)!=0))) || (boq == -1 /* else */)))
			continue;

		reached[1][86] = 1;
		reached[1][t->st] = 1;
		reached[1][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_827_0: /* 2 */
S_823_0: /* 2 */
		if (!((((int)now.C)!=0)))
			goto S_827_1;
S_824_0: /* 2 */
		now.C = 3;
#ifdef VAR_RANGES
		logval("C", ((int)now.C));
#endif
		;
		goto S_828_0;
S_827_1: /* 3 */
S_825_0: /* 2 */
		/* else */;
S_826_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_828_0;
S_827_2: /* 3 */
		Uerror("blocking sel in d_step (nr.7, near line 424)");
S_828_0: /* 2 */
		goto S_845_0;
S_845_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 31: // STATE 87 - window.pml:425 - [((crashes<2))] (0:0:0 - 1)
		IfNotBlocked
		reached[1][87] = 1;
		if (!((((int)now.crashes)<2)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 32: // STATE 97 - window.pml:388 - [D_STEP388]
		IfNotBlocked

		reached[1][97] = 1;
		reached[1][t->st] = 1;
		reached[1][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_831_0: /* 2 */
		now.alive[2] = 0;
#ifdef VAR_RANGES
		logval("alive[2]", ((int)now.alive[2]));
#endif
		;
S_832_0: /* 2 */
		now.crashes = (((int)now.crashes)+1);
#ifdef VAR_RANGES
		logval("crashes", ((int)now.crashes));
#endif
		;
S_833_0: /* 2 */
		now.lpc = 0;
#ifdef VAR_RANGES
		logval("lpc", ((int)now.lpc));
#endif
		;
S_838_0: /* 2 */
S_834_0: /* 2 */
		if (!(((((int)now.js)==1)&&(((int)now.holder)==2))))
			goto S_838_1;
S_835_0: /* 2 */
		now.lockDead = 1;
#ifdef VAR_RANGES
		logval("lockDead", ((int)now.lockDead));
#endif
		;
		goto S_839_0;
S_838_1: /* 3 */
S_836_0: /* 2 */
		/* else */;
S_837_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_839_0;
S_838_2: /* 3 */
		Uerror("blocking sel in d_step (nr.8, near line 390)");
S_839_0: /* 2 */
		goto S_841_0;
S_841_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 33: // STATE 111 - window.pml:426 - [D_STEP426]
		IfNotBlocked

		reached[1][111] = 1;
		reached[1][t->st] = 1;
		reached[1][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_847_0: /* 2 */
		now.lpc = 0;
#ifdef VAR_RANGES
		logval("lpc", ((int)now.lpc));
#endif
		;
S_852_0: /* 2 */
S_848_0: /* 2 */
		if (!((((((int)now.js)==1)&&(((int)now.holder)==2))&& !(((int)now.lockDead)))))
			goto S_852_1;
S_849_0: /* 2 */
		now.js = 2;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_853_0;
S_852_1: /* 3 */
S_850_0: /* 2 */
		/* else */;
S_851_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_853_0;
S_852_2: /* 3 */
		Uerror("blocking sel in d_step (nr.9, near line 426)");
S_853_0: /* 2 */
		goto S_871_0;
S_871_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 34: // STATE 112 - window.pml:427 - [((lres!=1))] (0:0:1 - 1)
		IfNotBlocked
		reached[1][112] = 1;
		if (!((((int)((P1 *)_this)->lres)!=1)))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: lres */  (trpt+1)->bup.oval = ((P1 *)_this)->lres;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P1 *)_this)->lres = 0;
		_m = 3; goto P999; /* 0 */
	case 35: // STATE 126 - window.pml:428 - [D_STEP428]
		IfNotBlocked

		reached[1][126] = 1;
		reached[1][t->st] = 1;
		reached[1][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_856_0: /* 2 */
		now.lpc = 0;
#ifdef VAR_RANGES
		logval("lpc", ((int)now.lpc));
#endif
		;
S_867_0: /* 2 */
S_857_0: /* 2 */
		if (!((((((int)now.js)==1)&&(((int)now.holder)==2))&& !(((int)now.lockDead)))))
			goto S_867_1;
S_858_0: /* 2 */
		now.made = (((int)now.made)+1);
#ifdef VAR_RANGES
		logval("made", ((int)now.made));
#endif
		;
S_863_0: /* 2 */
S_859_0: /* 2 */
		if (!((((int)now.made)<2)))
			goto S_863_1;
S_860_0: /* 2 */
		now.js = 0;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_864_0;
S_863_1: /* 3 */
S_861_0: /* 2 */
		/* else */;
S_862_0: /* 2 */
		now.js = 3;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_864_0;
S_863_2: /* 3 */
		Uerror("blocking sel in d_step (nr.10, near line 432)");
S_864_0: /* 2 */
		goto S_868_0;
S_867_1: /* 3 */
S_865_0: /* 2 */
		/* else */;
S_866_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_868_0;
S_867_2: /* 3 */
		Uerror("blocking sel in d_step (nr.11, near line 430)");
S_868_0: /* 2 */
		goto S_871_0; /* '.' */
		goto S_871_0; /* ';' */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 36: // STATE 132 - window.pml:441 - [D_STEP441]
		IfNotBlocked

		reached[1][132] = 1;
		reached[1][t->st] = 1;
		reached[1][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_874_0: /* 2 */
		now.alive[2] = 1;
#ifdef VAR_RANGES
		logval("alive[2]", ((int)now.alive[2]));
#endif
		;
		goto S_876_0;
S_876_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;


		 /* PROC Ringback */
	case 37: // STATE 1 - window.pml:262 - [alive[me] = 1] (0:0:1 - 1)
		IfNotBlocked
		reached[0][1] = 1;
		(trpt+1)->bup.oval = ((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ]);
		now.alive[ Index(((P0 *)_this)->me, 3) ] = 1;
#ifdef VAR_RANGES
		logval("alive[Ringback:me]", ((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 38: // STATE 10 - window.pml:267 - [D_STEP267]
		if (!(boq == -1 && ((((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ])&& !(((int)now.rolledBack)))&&(((int)now.js)==0))))
			continue;

		reached[0][10] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_002_0: /* 2 */
		if (!(((((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ])&& !(((int)now.rolledBack)))&&(((int)now.js)==0))))
			Uerror("block in d_step seq");
S_003_0: /* 2 */
		now.js = 1;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
S_004_0: /* 2 */
		now.holder = ((int)((P0 *)_this)->me);
#ifdef VAR_RANGES
		logval("holder", ((int)now.holder));
#endif
		;
S_005_0: /* 2 */
		now.lockDead = 0;
#ifdef VAR_RANGES
		logval("lockDead", ((int)now.lockDead));
#endif
		;
S_006_0: /* 2 */
		((P0 *)_this)->jobless = 0;
#ifdef VAR_RANGES
		logval("Ringback:jobless", ((int)((P0 *)_this)->jobless));
#endif
		;
S_007_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)+1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
S_008_0: /* 2 */
		((P0 *)_this)->busyAttempt = 1;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
		goto S_010_0;
S_010_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 39: // STATE 30 - window.pml:270 - [D_STEP270]
		if (!(boq == -1 && ((((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ])&& !(((int)now.rolledBack)))&&((int)now.inI))))
			continue;

		reached[0][30] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_011_0: /* 2 */
		if (!(((((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ])&& !(((int)now.rolledBack)))&&((int)now.inI))))
			Uerror("block in d_step seq");
S_012_0: /* 2 */
		((P0 *)_this)->jobless = 0;
#ifdef VAR_RANGES
		logval("Ringback:jobless", ((int)((P0 *)_this)->jobless));
#endif
		;
S_027_0: /* 2 */
S_013_0: /* 2 */
		if (!(( !((((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3)))||(((int)now.C)==3))))
			goto S_027_1;
S_014_0: /* 2 */
		now.inI = 0;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
		goto S_028_0;
S_027_1: /* 3 */
S_015_0: /* 2 */
		/* else */;
S_022_0: /* 2 */
S_016_0: /* 2 */
		if (!(((((int)now.C)==0)||((((int)now.C)==2)&&(((int)now.ctok)==((int)now.atok))))))
			goto S_022_1;
S_017_0: /* 2 */
		now.C = 2;
#ifdef VAR_RANGES
		logval("C", ((int)now.C));
#endif
		;
S_018_0: /* 2 */
		now.ctok = ((int)now.atok);
#ifdef VAR_RANGES
		logval("ctok", ((int)now.ctok));
#endif
		;
S_019_0: /* 2 */
		now.cshort = 0;
#ifdef VAR_RANGES
		logval("cshort", ((int)now.cshort));
#endif
		;
		goto S_023_0;
S_022_1: /* 3 */
S_020_0: /* 2 */
		/* else */;
S_021_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_023_0;
S_022_2: /* 3 */
		Uerror("blocking sel in d_step (nr.12, near line 277)");
S_023_0: /* 2 */
S_024_0: /* 2 */
		((P0 *)_this)->jobless = 1;
#ifdef VAR_RANGES
		logval("Ringback:jobless", ((int)((P0 *)_this)->jobless));
#endif
		;
S_025_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)+1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
S_026_0: /* 2 */
		((P0 *)_this)->busyAttempt = 1;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
		goto S_028_0;
S_027_2: /* 3 */
		Uerror("blocking sel in d_step (nr.13, near line 274)");
S_028_0: /* 2 */
		goto S_034_0;
S_034_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 40: // STATE 31 - window.pml:292 - [(jobless)] (0:0:0 - 1)
		IfNotBlocked
		reached[0][31] = 1;
		if (!(((int)((P0 *)_this)->jobless)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 41: // STATE 39 - window.pml:302 - [D_STEP302]
		if (!(boq == -1 && (((((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ])&& !(((int)now.rolledBack)))&&(((int)now.ast)==4))&& !(((int)now.polled)))))
			continue;

		reached[0][39] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_036_0: /* 2 */
		if (!((((((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ])&& !(((int)now.rolledBack)))&&(((int)now.ast)==4))&& !(((int)now.polled)))))
			Uerror("block in d_step seq");
S_037_0: /* 2 */
		now.polled = 1;
#ifdef VAR_RANGES
		logval("polled", ((int)now.polled));
#endif
		;
		goto S_045_0;
S_045_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 42: // STATE 43 - window.pml:303 - [D_STEP303]
		if (!(boq == -1 && (((int)now.errs)<2)))
			continue;

		reached[0][43] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_039_0: /* 2 */
		if (!((((int)now.errs)<2)))
			Uerror("block in d_step seq");
S_040_0: /* 2 */
		now.errs = (((int)now.errs)+1);
#ifdef VAR_RANGES
		logval("errs", ((int)now.errs));
#endif
		;
S_041_0: /* 2 */
		now.escalated = 1;
#ifdef VAR_RANGES
		logval("escalated", ((int)now.escalated));
#endif
		;
		goto S_046_0;
S_046_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 43: // STATE 48 - window.pml:305 - [(((alive[me]&&!(rolledBack))&&(crashes<2)))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][48] = 1;
		if (!(((((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ])&& !(((int)now.rolledBack)))&&(((int)now.crashes)<2))))
			continue;
		_m = 3; goto P999; /* 0 */
	case 44: // STATE 66 - window.pml:228 - [D_STEP228]
		IfNotBlocked

		reached[0][66] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_048_0: /* 2 */
		now.alive[ Index(((P0 *)_this)->me, 3) ] = 0;
#ifdef VAR_RANGES
		logval("alive[Ringback:me]", ((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ]));
#endif
		;
S_049_0: /* 2 */
		now.crashes = (((int)now.crashes)+1);
#ifdef VAR_RANGES
		logval("crashes", ((int)now.crashes));
#endif
		;
S_050_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_051_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_056_0: /* 2 */
S_052_0: /* 2 */
		if (!(((((int)now.js)==1)&&(((int)now.holder)==((int)((P0 *)_this)->me)))))
			goto S_056_1;
S_053_0: /* 2 */
		now.lockDead = 1;
#ifdef VAR_RANGES
		logval("lockDead", ((int)now.lockDead));
#endif
		;
		goto S_057_0;
S_056_1: /* 3 */
S_054_0: /* 2 */
		/* else */;
S_055_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_057_0;
S_056_2: /* 3 */
		Uerror("blocking sel in d_step (nr.14, near line 230)");
S_057_0: /* 2 */
S_062_0: /* 2 */
S_058_0: /* 2 */
		if (!(((((int)now.inAttempt)>0)&&((int)((P0 *)_this)->busyAttempt))))
			goto S_062_1;
S_059_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
		goto S_063_0;
S_062_1: /* 3 */
S_060_0: /* 2 */
		/* else */;
S_061_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_063_0;
S_062_2: /* 3 */
		Uerror("blocking sel in d_step (nr.15, near line 231)");
S_063_0: /* 2 */
S_064_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
		goto S_066_0;
S_066_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 45: // STATE 72 - window.pml:309 - [loops = 0] (0:0:1 - 5)
		IfNotBlocked
		reached[0][72] = 1;
		(trpt+1)->bup.oval = ((int)((P0 *)_this)->loops);
		((P0 *)_this)->loops = 0;
#ifdef VAR_RANGES
		logval("Ringback:loops", ((int)((P0 *)_this)->loops));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 46: // STATE 73 - window.pml:309 - [sup = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[0][73] = 1;
		(trpt+1)->bup.oval = ((int)((P0 *)_this)->sup);
		((P0 *)_this)->sup = 0;
#ifdef VAR_RANGES
		logval("Ringback:sup", ((int)((P0 *)_this)->sup));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 47: // STATE 157 - window.pml:135 - [D_STEP135]
		IfNotBlocked

		reached[0][157] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_073_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_082_0: /* 2 */
S_074_0: /* 2 */
		((P0 *)_this)->nt = 1;
#ifdef VAR_RANGES
		logval("Ringback:nt", ((int)((P0 *)_this)->nt));
#endif
		;
S_080_0: /* 2 */
S_079_0: /* 2 */
S_075_0: /* 2 */
		if (!((((((((int)now.C)==2)&&(((int)now.ctok)==((int)((P0 *)_this)->nt)))||((((int)now.ast)!=0)&&(((int)now.atok)==((int)((P0 *)_this)->nt))))||(((int)now.tok[0])==((int)((P0 *)_this)->nt)))||(((int)now.tok[1])==((int)((P0 *)_this)->nt)))))
			goto S_079_1;
S_076_0: /* 2 */
		((P0 *)_this)->nt = (((int)((P0 *)_this)->nt)+1);
#ifdef VAR_RANGES
		logval("Ringback:nt", ((int)((P0 *)_this)->nt));
#endif
		;
		goto S_080_0; /* ';' */
S_079_1: /* 3 */
S_077_0: /* 2 */
		/* else */;
S_078_0: /* 2 */
		goto S_154_0;	/* 'goto' */
S_079_2: /* 3 */
		Uerror("blocking sel in d_step (nr.16, near line 106)");
S_081_0: /* 2 */
		goto S_154_0;	/* 'break' */
		goto S_154_0;
S_154_0: /* 2 */
S_083_0: /* 2 */
		if (!((((int)now.C)==3)))
			goto S_154_1;
S_084_0: /* 2 */
		now.inI = 0;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
S_085_0: /* 2 */
		((P0 *)_this)->res = 1;
#ifdef VAR_RANGES
		logval("Ringback:res", ((int)((P0 *)_this)->res));
#endif
		;
		goto S_155_0;
S_154_1: /* 3 */
S_086_0: /* 2 */
		if (!((((int)now.C)==1)))
			goto S_154_2;
S_087_0: /* 2 */
		now.ast = 0;
#ifdef VAR_RANGES
		logval("ast", ((int)now.ast));
#endif
		;
S_103_0: /* 2 */
S_088_0: /* 2 */
		now.C = 2;
#ifdef VAR_RANGES
		logval("C", ((int)now.C));
#endif
		;
S_089_0: /* 2 */
		now.ctok = ((int)((P0 *)_this)->nt);
#ifdef VAR_RANGES
		logval("ctok", ((int)now.ctok));
#endif
		;
S_090_0: /* 2 */
		now.cshort = 0;
#ifdef VAR_RANGES
		logval("cshort", ((int)now.cshort));
#endif
		;
S_095_0: /* 2 */
S_091_0: /* 2 */
		if (!( !(0)))
			goto S_095_1;
S_092_0: /* 2 */
		now.rwin = 0;
#ifdef VAR_RANGES
		logval("rwin", ((int)now.rwin));
#endif
		;
		goto S_096_0;
S_095_1: /* 3 */
S_093_0: /* 2 */
		/* else */;
S_094_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_096_0;
S_095_2: /* 3 */
		Uerror("blocking sel in d_step (nr.17, near line 127)");
S_096_0: /* 2 */
S_097_0: /* 2 */
		now.ast = 2;
#ifdef VAR_RANGES
		logval("ast", ((int)now.ast));
#endif
		;
S_098_0: /* 2 */
		now.atok = ((int)((P0 *)_this)->nt);
#ifdef VAR_RANGES
		logval("atok", ((int)now.atok));
#endif
		;
S_099_0: /* 2 */
		now.inI = 1;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
S_100_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = ((int)((P0 *)_this)->nt);
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_101_0: /* 2 */
		((P0 *)_this)->res = 4;
#ifdef VAR_RANGES
		logval("Ringback:res", ((int)((P0 *)_this)->res));
#endif
		;
S_102_0: /* 2 */
		now.rbClaimed = 1;
#ifdef VAR_RANGES
		logval("rbClaimed", ((int)now.rbClaimed));
#endif
		;
		goto S_155_0;
		goto S_155_0;
S_154_2: /* 3 */
S_104_0: /* 2 */
		if (!(((((int)now.C)==2)&&((((int)now.atok)==((int)now.ctok))&&((((int)now.ast)==2)||((((int)now.ast)==1)&&((int)now.aged)))))))
			goto S_154_3;
S_120_0: /* 2 */
S_105_0: /* 2 */
		now.C = 2;
#ifdef VAR_RANGES
		logval("C", ((int)now.C));
#endif
		;
S_106_0: /* 2 */
		now.ctok = ((int)now.ctok);
#ifdef VAR_RANGES
		logval("ctok", ((int)now.ctok));
#endif
		;
S_107_0: /* 2 */
		now.cshort = 0;
#ifdef VAR_RANGES
		logval("cshort", ((int)now.cshort));
#endif
		;
S_112_0: /* 2 */
S_108_0: /* 2 */
		if (!( !(1)))
			goto S_112_1;
S_109_0: /* 2 */
		now.rwin = 0;
#ifdef VAR_RANGES
		logval("rwin", ((int)now.rwin));
#endif
		;
		goto S_113_0;
S_112_1: /* 3 */
S_110_0: /* 2 */
		/* else */;
S_111_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_113_0;
S_112_2: /* 3 */
		Uerror("blocking sel in d_step (nr.18, near line 127)");
S_113_0: /* 2 */
S_114_0: /* 2 */
		now.ast = 2;
#ifdef VAR_RANGES
		logval("ast", ((int)now.ast));
#endif
		;
S_115_0: /* 2 */
		now.atok = ((int)now.ctok);
#ifdef VAR_RANGES
		logval("atok", ((int)now.atok));
#endif
		;
S_116_0: /* 2 */
		now.inI = 1;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
S_117_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = ((int)now.ctok);
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_118_0: /* 2 */
		((P0 *)_this)->res = 4;
#ifdef VAR_RANGES
		logval("Ringback:res", ((int)((P0 *)_this)->res));
#endif
		;
S_119_0: /* 2 */
		now.rbClaimed = 1;
#ifdef VAR_RANGES
		logval("rbClaimed", ((int)now.rbClaimed));
#endif
		;
		goto S_155_0;
		goto S_155_0;
S_154_3: /* 3 */
S_121_0: /* 2 */
		if (!(((((int)now.C)==2)&& !(((((int)now.atok)==((int)now.ctok))&&((((int)now.ast)==2)||((((int)now.ast)==1)&&((int)now.aged))))))))
			goto S_154_4;
S_122_0: /* 2 */
		((P0 *)_this)->res = 2;
#ifdef VAR_RANGES
		logval("Ringback:res", ((int)((P0 *)_this)->res));
#endif
		;
		goto S_155_0;
S_154_4: /* 3 */
S_123_0: /* 2 */
		if (!(((((int)now.C)==0)&&((((int)now.ast)==1)||(((int)now.ast)==2)))))
			goto S_154_5;
S_139_0: /* 2 */
S_124_0: /* 2 */
		now.C = 2;
#ifdef VAR_RANGES
		logval("C", ((int)now.C));
#endif
		;
S_125_0: /* 2 */
		now.ctok = ((int)now.atok);
#ifdef VAR_RANGES
		logval("ctok", ((int)now.ctok));
#endif
		;
S_126_0: /* 2 */
		now.cshort = 0;
#ifdef VAR_RANGES
		logval("cshort", ((int)now.cshort));
#endif
		;
S_131_0: /* 2 */
S_127_0: /* 2 */
		if (!( !(1)))
			goto S_131_1;
S_128_0: /* 2 */
		now.rwin = 0;
#ifdef VAR_RANGES
		logval("rwin", ((int)now.rwin));
#endif
		;
		goto S_132_0;
S_131_1: /* 3 */
S_129_0: /* 2 */
		/* else */;
S_130_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_132_0;
S_131_2: /* 3 */
		Uerror("blocking sel in d_step (nr.19, near line 127)");
S_132_0: /* 2 */
S_133_0: /* 2 */
		now.ast = 2;
#ifdef VAR_RANGES
		logval("ast", ((int)now.ast));
#endif
		;
S_134_0: /* 2 */
		now.atok = ((int)now.atok);
#ifdef VAR_RANGES
		logval("atok", ((int)now.atok));
#endif
		;
S_135_0: /* 2 */
		now.inI = 1;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
S_136_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = ((int)now.atok);
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_137_0: /* 2 */
		((P0 *)_this)->res = 4;
#ifdef VAR_RANGES
		logval("Ringback:res", ((int)((P0 *)_this)->res));
#endif
		;
S_138_0: /* 2 */
		now.rbClaimed = 1;
#ifdef VAR_RANGES
		logval("rbClaimed", ((int)now.rbClaimed));
#endif
		;
		goto S_155_0;
		goto S_155_0;
S_154_5: /* 3 */
S_140_0: /* 2 */
		if (!(((((int)now.C)==0)&& !(((((int)now.ast)==1)||(((int)now.ast)==2))))))
			goto S_154_6;
S_153_0: /* 2 */
S_141_0: /* 2 */
		now.C = 2;
#ifdef VAR_RANGES
		logval("C", ((int)now.C));
#endif
		;
S_142_0: /* 2 */
		now.ctok = ((int)((P0 *)_this)->nt);
#ifdef VAR_RANGES
		logval("ctok", ((int)now.ctok));
#endif
		;
S_143_0: /* 2 */
		now.cshort = 1;
#ifdef VAR_RANGES
		logval("cshort", ((int)now.cshort));
#endif
		;
S_144_0: /* 2 */
		now.ast = 1;
#ifdef VAR_RANGES
		logval("ast", ((int)now.ast));
#endif
		;
S_145_0: /* 2 */
		now.atok = ((int)((P0 *)_this)->nt);
#ifdef VAR_RANGES
		logval("atok", ((int)now.atok));
#endif
		;
S_146_0: /* 2 */
		now.aged = 0;
#ifdef VAR_RANGES
		logval("aged", ((int)now.aged));
#endif
		;
S_147_0: /* 2 */
		now.rwin = 0;
#ifdef VAR_RANGES
		logval("rwin", ((int)now.rwin));
#endif
		;
S_148_0: /* 2 */
		now.inI = 1;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
S_149_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = ((int)((P0 *)_this)->nt);
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_150_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 1;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_151_0: /* 2 */
		((P0 *)_this)->res = 3;
#ifdef VAR_RANGES
		logval("Ringback:res", ((int)((P0 *)_this)->res));
#endif
		;
S_152_0: /* 2 */
		now.rbClaimed = 1;
#ifdef VAR_RANGES
		logval("rbClaimed", ((int)now.rbClaimed));
#endif
		;
		goto S_155_0;
		goto S_155_0;
S_154_6: /* 3 */
		Uerror("blocking sel in d_step (nr.20, near line 139)");
S_155_0: /* 2 */
		goto S_158_0;
S_158_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 48: // STATE 159 - window.pml:312 - [sup = 0] (0:211:2 - 1)
		IfNotBlocked
		reached[0][159] = 1;
		(trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((int)((P0 *)_this)->sup);
		((P0 *)_this)->sup = 0;
#ifdef VAR_RANGES
		logval("Ringback:sup", ((int)((P0 *)_this)->sup));
#endif
		;
		/* merge: loops = (loops+1)(211, 160, 211) */
		reached[0][160] = 1;
		(trpt+1)->bup.ovals[1] = ((int)((P0 *)_this)->loops);
		((P0 *)_this)->loops = (((int)((P0 *)_this)->loops)+1);
#ifdef VAR_RANGES
		logval("Ringback:loops", ((int)((P0 *)_this)->loops));
#endif
		;
		_m = 3; goto P999; /* 1 */
	case 49: // STATE 161 - window.pml:314 - [((res==1))] (0:0:1 - 1)
		IfNotBlocked
		reached[0][161] = 1;
		if (!((((int)((P0 *)_this)->res)==1)))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: res */  (trpt+1)->bup.oval = ((P0 *)_this)->res;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->res = 0;
		_m = 3; goto P999; /* 0 */
	case 50: // STATE 181 - window.pml:244 - [D_STEP244]
		if (!(((boq == -1 && ((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead))))) || ((boq == -1 && ((((int)((P0 *)_this)->jobless)&&(1==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3))))) || (boq == -1 /* else */)))
			continue;

		reached[0][181] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_174_0: /* 2 */
S_161_0: /* 2 */
		if (!(((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead)))))
			goto S_174_1;
S_168_0: /* 2 */
S_162_0: /* 2 */
		if (!((1==1)))
			goto S_168_1;
S_163_0: /* 2 */
		now.js = 2;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_169_0;
S_168_1: /* 3 */
S_164_0: /* 2 */
		if (!((1==2)))
			goto S_168_2;
S_165_0: /* 2 */
		now.js = 0;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_169_0;
S_168_2: /* 3 */
S_166_0: /* 2 */
		if (!((1==3)))
			goto S_168_3;
S_167_0: /* 2 */
		now.js = 3;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_169_0;
S_168_3: /* 3 */
		Uerror("blocking sel in d_step (nr.21, near line 247)");
S_169_0: /* 2 */
		goto S_175_0;
S_174_1: /* 3 */
S_170_0: /* 2 */
		if (!(((((int)((P0 *)_this)->jobless)&&(1==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3)))))
			goto S_174_2;
S_171_0: /* 2 */
		now.inI = 1;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
		goto S_175_0;
S_174_2: /* 3 */
S_172_0: /* 2 */
		/* else */;
S_173_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_175_0;
S_174_3: /* 3 */
		Uerror("blocking sel in d_step (nr.22, near line 245)");
S_175_0: /* 2 */
S_176_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
S_177_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
S_178_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_179_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
		goto S_182_0;
S_182_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 51: // STATE 184 - window.pml:315 - [((res==2))] (0:0:1 - 1)
		IfNotBlocked
		reached[0][184] = 1;
		if (!((((int)((P0 *)_this)->res)==2)))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: res */  (trpt+1)->bup.oval = ((P0 *)_this)->res;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->res = 0;
		_m = 3; goto P999; /* 0 */
	case 52: // STATE 204 - window.pml:244 - [D_STEP244]
		if (!(((boq == -1 && ((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead))))) || ((boq == -1 && ((((int)((P0 *)_this)->jobless)&&(2==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3))))) || (boq == -1 /* else */)))
			continue;

		reached[0][204] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_197_0: /* 2 */
S_184_0: /* 2 */
		if (!(((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead)))))
			goto S_197_1;
S_191_0: /* 2 */
S_185_0: /* 2 */
		if (!((2==1)))
			goto S_191_1;
S_186_0: /* 2 */
		now.js = 2;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_192_0;
S_191_1: /* 3 */
S_187_0: /* 2 */
		if (!((2==2)))
			goto S_191_2;
S_188_0: /* 2 */
		now.js = 0;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_192_0;
S_191_2: /* 3 */
S_189_0: /* 2 */
		if (!((2==3)))
			goto S_191_3;
S_190_0: /* 2 */
		now.js = 3;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_192_0;
S_191_3: /* 3 */
		Uerror("blocking sel in d_step (nr.23, near line 247)");
S_192_0: /* 2 */
		goto S_198_0;
S_197_1: /* 3 */
S_193_0: /* 2 */
		if (!(((((int)((P0 *)_this)->jobless)&&(2==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3)))))
			goto S_197_2;
S_194_0: /* 2 */
		now.inI = 1;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
		goto S_198_0;
S_197_2: /* 3 */
S_195_0: /* 2 */
		/* else */;
S_196_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_198_0;
S_197_3: /* 3 */
		Uerror("blocking sel in d_step (nr.24, near line 245)");
S_198_0: /* 2 */
S_199_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
S_200_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
S_201_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_202_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
		goto S_205_0;
S_205_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 53: // STATE 207 - window.pml:316 - [((res==3))] (0:0:1 - 1)
		IfNotBlocked
		reached[0][207] = 1;
		if (!((((int)((P0 *)_this)->res)==3)))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: res */  (trpt+1)->bup.oval = ((P0 *)_this)->res;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->res = 0;
		_m = 3; goto P999; /* 0 */
	case 54: // STATE 209 - window.pml:317 - [((res==4))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][209] = 1;
		if (!((((int)((P0 *)_this)->res)==4)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 55: // STATE 213 - window.pml:321 - [((crashes<2))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][213] = 1;
		if (!((((int)now.crashes)<2)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 56: // STATE 231 - window.pml:228 - [D_STEP228]
		IfNotBlocked

		reached[0][231] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_213_0: /* 2 */
		now.alive[ Index(((P0 *)_this)->me, 3) ] = 0;
#ifdef VAR_RANGES
		logval("alive[Ringback:me]", ((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ]));
#endif
		;
S_214_0: /* 2 */
		now.crashes = (((int)now.crashes)+1);
#ifdef VAR_RANGES
		logval("crashes", ((int)now.crashes));
#endif
		;
S_215_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_216_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_221_0: /* 2 */
S_217_0: /* 2 */
		if (!(((((int)now.js)==1)&&(((int)now.holder)==((int)((P0 *)_this)->me)))))
			goto S_221_1;
S_218_0: /* 2 */
		now.lockDead = 1;
#ifdef VAR_RANGES
		logval("lockDead", ((int)now.lockDead));
#endif
		;
		goto S_222_0;
S_221_1: /* 3 */
S_219_0: /* 2 */
		/* else */;
S_220_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_222_0;
S_221_2: /* 3 */
		Uerror("blocking sel in d_step (nr.25, near line 230)");
S_222_0: /* 2 */
S_227_0: /* 2 */
S_223_0: /* 2 */
		if (!(((((int)now.inAttempt)>0)&&((int)((P0 *)_this)->busyAttempt))))
			goto S_227_1;
S_224_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
		goto S_228_0;
S_227_1: /* 3 */
S_225_0: /* 2 */
		/* else */;
S_226_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_228_0;
S_227_2: /* 3 */
		Uerror("blocking sel in d_step (nr.26, near line 231)");
S_228_0: /* 2 */
S_229_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
		goto S_231_0;
S_231_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 57: // STATE 259 - window.pml:322 - [D_STEP322]
		if (!(((boq == -1 && (((int)now.errs)<2))) || ((boq == -1 && (((int)now.errs)<2))) || ((boq == -1 && (((int)now.errs)<2))) || ((boq == -1 && (((int)now.errs)<2)))))
			continue;

		reached[0][259] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_250_0: /* 2 */
S_237_0: /* 2 */
		((P0 *)_this)->ans = 1;
#ifdef VAR_RANGES
		logval("Ringback:ans", ((int)((P0 *)_this)->ans));
#endif
		;
		goto S_251_0;
S_250_1: /* 3 */
S_238_0: /* 2 */
		if (!((((int)now.errs)<2)))
			goto S_250_2;
S_239_0: /* 2 */
		((P0 *)_this)->ans = 2;
#ifdef VAR_RANGES
		logval("Ringback:ans", ((int)((P0 *)_this)->ans));
#endif
		;
S_240_0: /* 2 */
		now.errs = (((int)now.errs)+1);
#ifdef VAR_RANGES
		logval("errs", ((int)now.errs));
#endif
		;
		goto S_251_0;
S_250_2: /* 3 */
S_241_0: /* 2 */
		if (!((((int)now.errs)<2)))
			goto S_250_3;
S_242_0: /* 2 */
		((P0 *)_this)->ans = 3;
#ifdef VAR_RANGES
		logval("Ringback:ans", ((int)((P0 *)_this)->ans));
#endif
		;
S_243_0: /* 2 */
		now.errs = (((int)now.errs)+1);
#ifdef VAR_RANGES
		logval("errs", ((int)now.errs));
#endif
		;
		goto S_251_0;
S_250_3: /* 3 */
S_244_0: /* 2 */
		if (!((((int)now.errs)<2)))
			goto S_250_4;
S_245_0: /* 2 */
		((P0 *)_this)->ans = 4;
#ifdef VAR_RANGES
		logval("Ringback:ans", ((int)((P0 *)_this)->ans));
#endif
		;
S_246_0: /* 2 */
		now.errs = (((int)now.errs)+1);
#ifdef VAR_RANGES
		logval("errs", ((int)now.errs));
#endif
		;
		goto S_251_0;
S_250_4: /* 3 */
S_247_0: /* 2 */
		if (!((((int)now.errs)<2)))
			goto S_250_5;
S_248_0: /* 2 */
		((P0 *)_this)->ans = 5;
#ifdef VAR_RANGES
		logval("Ringback:ans", ((int)((P0 *)_this)->ans));
#endif
		;
S_249_0: /* 2 */
		now.errs = (((int)now.errs)+1);
#ifdef VAR_RANGES
		logval("errs", ((int)now.errs));
#endif
		;
		goto S_251_0;
S_250_5: /* 3 */
		Uerror("blocking sel in d_step (nr.27, near line 323)");
S_251_0: /* 2 */
S_256_0: /* 2 */
S_252_0: /* 2 */
		if (!(((((int)((P0 *)_this)->ans)==1)||(((int)((P0 *)_this)->ans)==4))))
			goto S_256_1;
S_253_0: /* 2 */
		now.texts = (((int)now.texts)+1);
#ifdef VAR_RANGES
		logval("texts", ((int)now.texts));
#endif
		;
		goto S_257_0;
S_256_1: /* 3 */
S_254_0: /* 2 */
		/* else */;
S_255_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_257_0;
S_256_2: /* 3 */
		Uerror("blocking sel in d_step (nr.28, near line 333)");
S_257_0: /* 2 */
		goto S_282_0;
S_282_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 58: // STATE 260 - window.pml:335 - [((crashes<2))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][260] = 1;
		if (!((((int)now.crashes)<2)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 59: // STATE 278 - window.pml:228 - [D_STEP228]
		IfNotBlocked

		reached[0][278] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_260_0: /* 2 */
		now.alive[ Index(((P0 *)_this)->me, 3) ] = 0;
#ifdef VAR_RANGES
		logval("alive[Ringback:me]", ((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ]));
#endif
		;
S_261_0: /* 2 */
		now.crashes = (((int)now.crashes)+1);
#ifdef VAR_RANGES
		logval("crashes", ((int)now.crashes));
#endif
		;
S_262_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_263_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_268_0: /* 2 */
S_264_0: /* 2 */
		if (!(((((int)now.js)==1)&&(((int)now.holder)==((int)((P0 *)_this)->me)))))
			goto S_268_1;
S_265_0: /* 2 */
		now.lockDead = 1;
#ifdef VAR_RANGES
		logval("lockDead", ((int)now.lockDead));
#endif
		;
		goto S_269_0;
S_268_1: /* 3 */
S_266_0: /* 2 */
		/* else */;
S_267_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_269_0;
S_268_2: /* 3 */
		Uerror("blocking sel in d_step (nr.29, near line 230)");
S_269_0: /* 2 */
S_274_0: /* 2 */
S_270_0: /* 2 */
		if (!(((((int)now.inAttempt)>0)&&((int)((P0 *)_this)->busyAttempt))))
			goto S_274_1;
S_271_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
		goto S_275_0;
S_274_1: /* 3 */
S_272_0: /* 2 */
		/* else */;
S_273_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_275_0;
S_274_2: /* 3 */
		Uerror("blocking sel in d_step (nr.30, near line 231)");
S_275_0: /* 2 */
S_276_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
		goto S_278_0;
S_278_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 60: // STATE 285 - window.pml:337 - [((ans==1))] (0:0:1 - 1)
		IfNotBlocked
		reached[0][285] = 1;
		if (!((((int)((P0 *)_this)->ans)==1)))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: ans */  (trpt+1)->bup.oval = ((P0 *)_this)->ans;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->ans = 0;
		_m = 3; goto P999; /* 0 */
	case 61: // STATE 296 - window.pml:177 - [D_STEP177]
		IfNotBlocked

		reached[0][296] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_285_0: /* 2 */
		now.C = 3;
#ifdef VAR_RANGES
		logval("C", ((int)now.C));
#endif
		;
S_286_0: /* 2 */
		now.cshort = 0;
#ifdef VAR_RANGES
		logval("cshort", ((int)now.cshort));
#endif
		;
S_292_0: /* 2 */
S_287_0: /* 2 */
		if (!(((((int)now.atok)==((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]))||(((int)now.ast)==0))))
			goto S_292_1;
S_288_0: /* 2 */
		now.ast = 4;
#ifdef VAR_RANGES
		logval("ast", ((int)now.ast));
#endif
		;
S_289_0: /* 2 */
		now.atok = ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]);
#ifdef VAR_RANGES
		logval("atok", ((int)now.atok));
#endif
		;
		goto S_293_0;
S_292_1: /* 3 */
S_290_0: /* 2 */
		/* else */;
S_291_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_293_0;
S_292_2: /* 3 */
		Uerror("blocking sel in d_step (nr.31, near line 179)");
S_293_0: /* 2 */
S_294_0: /* 2 */
		now.inI = 0;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
		goto S_297_0;
S_297_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 62: // STATE 298 - window.pml:337 - [sending[me] = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[0][298] = 1;
		(trpt+1)->bup.oval = ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]);
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 63: // STATE 299 - window.pml:338 - [((crashes<2))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][299] = 1;
		if (!((((int)now.crashes)<2)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 64: // STATE 317 - window.pml:228 - [D_STEP228]
		IfNotBlocked

		reached[0][317] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_299_0: /* 2 */
		now.alive[ Index(((P0 *)_this)->me, 3) ] = 0;
#ifdef VAR_RANGES
		logval("alive[Ringback:me]", ((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ]));
#endif
		;
S_300_0: /* 2 */
		now.crashes = (((int)now.crashes)+1);
#ifdef VAR_RANGES
		logval("crashes", ((int)now.crashes));
#endif
		;
S_301_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_302_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_307_0: /* 2 */
S_303_0: /* 2 */
		if (!(((((int)now.js)==1)&&(((int)now.holder)==((int)((P0 *)_this)->me)))))
			goto S_307_1;
S_304_0: /* 2 */
		now.lockDead = 1;
#ifdef VAR_RANGES
		logval("lockDead", ((int)now.lockDead));
#endif
		;
		goto S_308_0;
S_307_1: /* 3 */
S_305_0: /* 2 */
		/* else */;
S_306_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_308_0;
S_307_2: /* 3 */
		Uerror("blocking sel in d_step (nr.32, near line 230)");
S_308_0: /* 2 */
S_313_0: /* 2 */
S_309_0: /* 2 */
		if (!(((((int)now.inAttempt)>0)&&((int)((P0 *)_this)->busyAttempt))))
			goto S_313_1;
S_310_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
		goto S_314_0;
S_313_1: /* 3 */
S_311_0: /* 2 */
		/* else */;
S_312_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_314_0;
S_313_2: /* 3 */
		Uerror("blocking sel in d_step (nr.33, near line 231)");
S_314_0: /* 2 */
S_315_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
		goto S_317_0;
S_317_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 65: // STATE 343 - window.pml:244 - [D_STEP244]
		if (!(((boq == -1 && ((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead))))) || ((boq == -1 && ((((int)((P0 *)_this)->jobless)&&(1==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3))))) || (boq == -1 /* else */)))
			continue;

		reached[0][343] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_336_0: /* 2 */
S_323_0: /* 2 */
		if (!(((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead)))))
			goto S_336_1;
S_330_0: /* 2 */
S_324_0: /* 2 */
		if (!((1==1)))
			goto S_330_1;
S_325_0: /* 2 */
		now.js = 2;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_331_0;
S_330_1: /* 3 */
S_326_0: /* 2 */
		if (!((1==2)))
			goto S_330_2;
S_327_0: /* 2 */
		now.js = 0;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_331_0;
S_330_2: /* 3 */
S_328_0: /* 2 */
		if (!((1==3)))
			goto S_330_3;
S_329_0: /* 2 */
		now.js = 3;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_331_0;
S_330_3: /* 3 */
		Uerror("blocking sel in d_step (nr.34, near line 247)");
S_331_0: /* 2 */
		goto S_337_0;
S_336_1: /* 3 */
S_332_0: /* 2 */
		if (!(((((int)((P0 *)_this)->jobless)&&(1==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3)))))
			goto S_336_2;
S_333_0: /* 2 */
		now.inI = 1;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
		goto S_337_0;
S_336_2: /* 3 */
S_334_0: /* 2 */
		/* else */;
S_335_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_337_0;
S_336_3: /* 3 */
		Uerror("blocking sel in d_step (nr.35, near line 245)");
S_337_0: /* 2 */
S_338_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
S_339_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
S_340_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_341_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
		goto S_344_0;
S_344_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 66: // STATE 346 - window.pml:340 - [((ans==2))] (0:0:1 - 1)
		IfNotBlocked
		reached[0][346] = 1;
		if (!((((int)((P0 *)_this)->ans)==2)))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: ans */  (trpt+1)->bup.oval = ((P0 *)_this)->ans;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->ans = 0;
		_m = 3; goto P999; /* 0 */
	case 67: // STATE 360 - window.pml:187 - [D_STEP187]
		if (!(((boq == -1 && ((((int)now.C)==2)&&(((int)now.ctok)==((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]))))) || (boq == -1 /* else */)))
			continue;

		reached[0][360] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_350_0: /* 2 */
S_346_0: /* 2 */
		if (!(((((int)now.C)==2)&&(((int)now.ctok)==((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ])))))
			goto S_350_1;
S_347_0: /* 2 */
		now.C = 0;
#ifdef VAR_RANGES
		logval("C", ((int)now.C));
#endif
		;
		goto S_351_0;
S_350_1: /* 3 */
S_348_0: /* 2 */
		/* else */;
S_349_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_351_0;
S_350_2: /* 3 */
		Uerror("blocking sel in d_step (nr.36, near line 188)");
S_351_0: /* 2 */
S_357_0: /* 2 */
S_352_0: /* 2 */
		if (!(((((int)now.atok)==((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]))&&(((int)now.ast)!=0))))
			goto S_357_1;
S_353_0: /* 2 */
		now.ast = 6;
#ifdef VAR_RANGES
		logval("ast", ((int)now.ast));
#endif
		;
S_354_0: /* 2 */
		now.inI = 0;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
		goto S_358_0;
S_357_1: /* 3 */
S_355_0: /* 2 */
		/* else */;
S_356_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_358_0;
S_357_2: /* 3 */
		Uerror("blocking sel in d_step (nr.37, near line 189)");
S_358_0: /* 2 */
		goto S_361_0;
S_361_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 68: // STATE 362 - window.pml:340 - [sending[me] = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[0][362] = 1;
		(trpt+1)->bup.oval = ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]);
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 69: // STATE 363 - window.pml:341 - [((crashes<2))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][363] = 1;
		if (!((((int)now.crashes)<2)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 70: // STATE 381 - window.pml:228 - [D_STEP228]
		IfNotBlocked

		reached[0][381] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_363_0: /* 2 */
		now.alive[ Index(((P0 *)_this)->me, 3) ] = 0;
#ifdef VAR_RANGES
		logval("alive[Ringback:me]", ((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ]));
#endif
		;
S_364_0: /* 2 */
		now.crashes = (((int)now.crashes)+1);
#ifdef VAR_RANGES
		logval("crashes", ((int)now.crashes));
#endif
		;
S_365_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_366_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_371_0: /* 2 */
S_367_0: /* 2 */
		if (!(((((int)now.js)==1)&&(((int)now.holder)==((int)((P0 *)_this)->me)))))
			goto S_371_1;
S_368_0: /* 2 */
		now.lockDead = 1;
#ifdef VAR_RANGES
		logval("lockDead", ((int)now.lockDead));
#endif
		;
		goto S_372_0;
S_371_1: /* 3 */
S_369_0: /* 2 */
		/* else */;
S_370_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_372_0;
S_371_2: /* 3 */
		Uerror("blocking sel in d_step (nr.38, near line 230)");
S_372_0: /* 2 */
S_377_0: /* 2 */
S_373_0: /* 2 */
		if (!(((((int)now.inAttempt)>0)&&((int)((P0 *)_this)->busyAttempt))))
			goto S_377_1;
S_374_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
		goto S_378_0;
S_377_1: /* 3 */
S_375_0: /* 2 */
		/* else */;
S_376_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_378_0;
S_377_2: /* 3 */
		Uerror("blocking sel in d_step (nr.39, near line 231)");
S_378_0: /* 2 */
S_379_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
		goto S_381_0;
S_381_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 71: // STATE 389 - window.pml:342 - [D_STEP342]
		IfNotBlocked

		reached[0][389] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_387_0: /* 2 */
		now.escalated = 1;
#ifdef VAR_RANGES
		logval("escalated", ((int)now.escalated));
#endif
		;
		goto S_409_0;
S_409_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 72: // STATE 409 - window.pml:244 - [D_STEP244]
		if (!(((boq == -1 && ((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead))))) || ((boq == -1 && ((((int)((P0 *)_this)->jobless)&&(3==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3))))) || (boq == -1 /* else */)))
			continue;

		reached[0][409] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_402_0: /* 2 */
S_389_0: /* 2 */
		if (!(((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead)))))
			goto S_402_1;
S_396_0: /* 2 */
S_390_0: /* 2 */
		if (!((3==1)))
			goto S_396_1;
S_391_0: /* 2 */
		now.js = 2;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_397_0;
S_396_1: /* 3 */
S_392_0: /* 2 */
		if (!((3==2)))
			goto S_396_2;
S_393_0: /* 2 */
		now.js = 0;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_397_0;
S_396_2: /* 3 */
S_394_0: /* 2 */
		if (!((3==3)))
			goto S_396_3;
S_395_0: /* 2 */
		now.js = 3;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_397_0;
S_396_3: /* 3 */
		Uerror("blocking sel in d_step (nr.40, near line 247)");
S_397_0: /* 2 */
		goto S_403_0;
S_402_1: /* 3 */
S_398_0: /* 2 */
		if (!(((((int)((P0 *)_this)->jobless)&&(3==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3)))))
			goto S_402_2;
S_399_0: /* 2 */
		now.inI = 1;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
		goto S_403_0;
S_402_2: /* 3 */
S_400_0: /* 2 */
		/* else */;
S_401_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_403_0;
S_402_3: /* 3 */
		Uerror("blocking sel in d_step (nr.41, near line 245)");
S_403_0: /* 2 */
S_404_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
S_405_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
S_406_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_407_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
		goto S_410_0;
S_410_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 73: // STATE 412 - window.pml:344 - [(((ans==3)||(ans==6)))] (0:0:1 - 1)
		IfNotBlocked
		reached[0][412] = 1;
		if (!(((((int)((P0 *)_this)->ans)==3)||(((int)((P0 *)_this)->ans)==6))))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: ans */  (trpt+1)->bup.oval = ((P0 *)_this)->ans;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->ans = 0;
		_m = 3; goto P999; /* 0 */
	case 74: // STATE 426 - window.pml:187 - [D_STEP187]
		if (!(((boq == -1 && ((((int)now.C)==2)&&(((int)now.ctok)==((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]))))) || (boq == -1 /* else */)))
			continue;

		reached[0][426] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_416_0: /* 2 */
S_412_0: /* 2 */
		if (!(((((int)now.C)==2)&&(((int)now.ctok)==((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ])))))
			goto S_416_1;
S_413_0: /* 2 */
		now.C = 0;
#ifdef VAR_RANGES
		logval("C", ((int)now.C));
#endif
		;
		goto S_417_0;
S_416_1: /* 3 */
S_414_0: /* 2 */
		/* else */;
S_415_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_417_0;
S_416_2: /* 3 */
		Uerror("blocking sel in d_step (nr.42, near line 188)");
S_417_0: /* 2 */
S_423_0: /* 2 */
S_418_0: /* 2 */
		if (!(((((int)now.atok)==((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]))&&(((int)now.ast)!=0))))
			goto S_423_1;
S_419_0: /* 2 */
		now.ast = 5;
#ifdef VAR_RANGES
		logval("ast", ((int)now.ast));
#endif
		;
S_420_0: /* 2 */
		now.inI = 0;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
		goto S_424_0;
S_423_1: /* 3 */
S_421_0: /* 2 */
		/* else */;
S_422_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_424_0;
S_423_2: /* 3 */
		Uerror("blocking sel in d_step (nr.43, near line 189)");
S_424_0: /* 2 */
		goto S_427_0;
S_427_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 75: // STATE 428 - window.pml:344 - [sending[me] = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[0][428] = 1;
		(trpt+1)->bup.oval = ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]);
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 76: // STATE 429 - window.pml:345 - [((crashes<2))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][429] = 1;
		if (!((((int)now.crashes)<2)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 77: // STATE 447 - window.pml:228 - [D_STEP228]
		IfNotBlocked

		reached[0][447] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_429_0: /* 2 */
		now.alive[ Index(((P0 *)_this)->me, 3) ] = 0;
#ifdef VAR_RANGES
		logval("alive[Ringback:me]", ((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ]));
#endif
		;
S_430_0: /* 2 */
		now.crashes = (((int)now.crashes)+1);
#ifdef VAR_RANGES
		logval("crashes", ((int)now.crashes));
#endif
		;
S_431_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_432_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_437_0: /* 2 */
S_433_0: /* 2 */
		if (!(((((int)now.js)==1)&&(((int)now.holder)==((int)((P0 *)_this)->me)))))
			goto S_437_1;
S_434_0: /* 2 */
		now.lockDead = 1;
#ifdef VAR_RANGES
		logval("lockDead", ((int)now.lockDead));
#endif
		;
		goto S_438_0;
S_437_1: /* 3 */
S_435_0: /* 2 */
		/* else */;
S_436_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_438_0;
S_437_2: /* 3 */
		Uerror("blocking sel in d_step (nr.44, near line 230)");
S_438_0: /* 2 */
S_443_0: /* 2 */
S_439_0: /* 2 */
		if (!(((((int)now.inAttempt)>0)&&((int)((P0 *)_this)->busyAttempt))))
			goto S_443_1;
S_440_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
		goto S_444_0;
S_443_1: /* 3 */
S_441_0: /* 2 */
		/* else */;
S_442_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_444_0;
S_443_2: /* 3 */
		Uerror("blocking sel in d_step (nr.45, near line 231)");
S_444_0: /* 2 */
S_445_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
		goto S_447_0;
S_447_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 78: // STATE 473 - window.pml:244 - [D_STEP244]
		if (!(((boq == -1 && ((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead))))) || ((boq == -1 && ((((int)((P0 *)_this)->jobless)&&(2==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3))))) || (boq == -1 /* else */)))
			continue;

		reached[0][473] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_466_0: /* 2 */
S_453_0: /* 2 */
		if (!(((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead)))))
			goto S_466_1;
S_460_0: /* 2 */
S_454_0: /* 2 */
		if (!((2==1)))
			goto S_460_1;
S_455_0: /* 2 */
		now.js = 2;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_461_0;
S_460_1: /* 3 */
S_456_0: /* 2 */
		if (!((2==2)))
			goto S_460_2;
S_457_0: /* 2 */
		now.js = 0;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_461_0;
S_460_2: /* 3 */
S_458_0: /* 2 */
		if (!((2==3)))
			goto S_460_3;
S_459_0: /* 2 */
		now.js = 3;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_461_0;
S_460_3: /* 3 */
		Uerror("blocking sel in d_step (nr.46, near line 247)");
S_461_0: /* 2 */
		goto S_467_0;
S_466_1: /* 3 */
S_462_0: /* 2 */
		if (!(((((int)((P0 *)_this)->jobless)&&(2==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3)))))
			goto S_466_2;
S_463_0: /* 2 */
		now.inI = 1;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
		goto S_467_0;
S_466_2: /* 3 */
S_464_0: /* 2 */
		/* else */;
S_465_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_467_0;
S_466_3: /* 3 */
		Uerror("blocking sel in d_step (nr.47, near line 245)");
S_467_0: /* 2 */
S_468_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
S_469_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
S_470_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_471_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
		goto S_474_0;
S_474_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 79: // STATE 476 - window.pml:347 - [(((ans==4)||(ans==5)))] (0:0:1 - 1)
		IfNotBlocked
		reached[0][476] = 1;
		if (!(((((int)((P0 *)_this)->ans)==4)||(((int)((P0 *)_this)->ans)==5))))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: ans */  (trpt+1)->bup.oval = ((P0 *)_this)->ans;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->ans = 0;
		_m = 3; goto P999; /* 0 */
	case 80: // STATE 493 - window.pml:210 - [D_STEP210]
		if (!(((boq == -1 && ((((int)now.C)==0)||((((int)now.C)==2)&&(((int)now.ctok)==((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ])))))) || (boq == -1 /* else */)))
			continue;

		reached[0][493] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_490_0: /* 2 */
S_476_0: /* 2 */
		if (!(((((int)now.C)==0)||((((int)now.C)==2)&&(((int)now.ctok)==((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]))))))
			goto S_490_1;
S_477_0: /* 2 */
		now.C = 2;
#ifdef VAR_RANGES
		logval("C", ((int)now.C));
#endif
		;
S_478_0: /* 2 */
		now.ctok = ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]);
#ifdef VAR_RANGES
		logval("ctok", ((int)now.ctok));
#endif
		;
S_479_0: /* 2 */
		now.cshort = 0;
#ifdef VAR_RANGES
		logval("cshort", ((int)now.cshort));
#endif
		;
S_485_0: /* 2 */
S_480_0: /* 2 */
		if (!((((((int)now.atok)==((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]))&&(((int)now.ast)!=2))&&(((int)now.ast)!=0))))
			goto S_485_1;
S_481_0: /* 2 */
		now.ast = 2;
#ifdef VAR_RANGES
		logval("ast", ((int)now.ast));
#endif
		;
S_482_0: /* 2 */
		now.rwin = 0;
#ifdef VAR_RANGES
		logval("rwin", ((int)now.rwin));
#endif
		;
		goto S_486_0;
S_485_1: /* 3 */
S_483_0: /* 2 */
		/* else */;
S_484_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_486_0;
S_485_2: /* 3 */
		Uerror("blocking sel in d_step (nr.48, near line 219)");
S_486_0: /* 2 */
S_487_0: /* 2 */
		now.inI = 1;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
		goto S_491_0;
S_490_1: /* 3 */
S_488_0: /* 2 */
		/* else */;
S_489_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_491_0;
S_490_2: /* 3 */
		Uerror("blocking sel in d_step (nr.49, near line 215)");
S_491_0: /* 2 */
		goto S_494_0;
S_494_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 81: // STATE 495 - window.pml:347 - [sending[me] = 0] (0:0:1 - 1)
		IfNotBlocked
		reached[0][495] = 1;
		(trpt+1)->bup.oval = ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]);
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 82: // STATE 496 - window.pml:348 - [((crashes<2))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][496] = 1;
		if (!((((int)now.crashes)<2)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 83: // STATE 514 - window.pml:228 - [D_STEP228]
		IfNotBlocked

		reached[0][514] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_496_0: /* 2 */
		now.alive[ Index(((P0 *)_this)->me, 3) ] = 0;
#ifdef VAR_RANGES
		logval("alive[Ringback:me]", ((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ]));
#endif
		;
S_497_0: /* 2 */
		now.crashes = (((int)now.crashes)+1);
#ifdef VAR_RANGES
		logval("crashes", ((int)now.crashes));
#endif
		;
S_498_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_499_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_504_0: /* 2 */
S_500_0: /* 2 */
		if (!(((((int)now.js)==1)&&(((int)now.holder)==((int)((P0 *)_this)->me)))))
			goto S_504_1;
S_501_0: /* 2 */
		now.lockDead = 1;
#ifdef VAR_RANGES
		logval("lockDead", ((int)now.lockDead));
#endif
		;
		goto S_505_0;
S_504_1: /* 3 */
S_502_0: /* 2 */
		/* else */;
S_503_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_505_0;
S_504_2: /* 3 */
		Uerror("blocking sel in d_step (nr.50, near line 230)");
S_505_0: /* 2 */
S_510_0: /* 2 */
S_506_0: /* 2 */
		if (!(((((int)now.inAttempt)>0)&&((int)((P0 *)_this)->busyAttempt))))
			goto S_510_1;
S_507_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
		goto S_511_0;
S_510_1: /* 3 */
S_508_0: /* 2 */
		/* else */;
S_509_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_511_0;
S_510_2: /* 3 */
		Uerror("blocking sel in d_step (nr.51, near line 231)");
S_511_0: /* 2 */
S_512_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
		goto S_514_0;
S_514_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 84: // STATE 540 - window.pml:244 - [D_STEP244]
		if (!(((boq == -1 && ((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead))))) || ((boq == -1 && ((((int)((P0 *)_this)->jobless)&&(2==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3))))) || (boq == -1 /* else */)))
			continue;

		reached[0][540] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_533_0: /* 2 */
S_520_0: /* 2 */
		if (!(((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead)))))
			goto S_533_1;
S_527_0: /* 2 */
S_521_0: /* 2 */
		if (!((2==1)))
			goto S_527_1;
S_522_0: /* 2 */
		now.js = 2;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_528_0;
S_527_1: /* 3 */
S_523_0: /* 2 */
		if (!((2==2)))
			goto S_527_2;
S_524_0: /* 2 */
		now.js = 0;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_528_0;
S_527_2: /* 3 */
S_525_0: /* 2 */
		if (!((2==3)))
			goto S_527_3;
S_526_0: /* 2 */
		now.js = 3;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_528_0;
S_527_3: /* 3 */
		Uerror("blocking sel in d_step (nr.52, near line 247)");
S_528_0: /* 2 */
		goto S_534_0;
S_533_1: /* 3 */
S_529_0: /* 2 */
		if (!(((((int)((P0 *)_this)->jobless)&&(2==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3)))))
			goto S_533_2;
S_530_0: /* 2 */
		now.inI = 1;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
		goto S_534_0;
S_533_2: /* 3 */
S_531_0: /* 2 */
		/* else */;
S_532_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_534_0;
S_533_3: /* 3 */
		Uerror("blocking sel in d_step (nr.53, near line 245)");
S_534_0: /* 2 */
S_535_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
S_536_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
S_537_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_538_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
		goto S_541_0;
S_541_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 85: // STATE 545 - window.pml:353 - [((crashes<2))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][545] = 1;
		if (!((((int)now.crashes)<2)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 86: // STATE 563 - window.pml:228 - [D_STEP228]
		IfNotBlocked

		reached[0][563] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_545_0: /* 2 */
		now.alive[ Index(((P0 *)_this)->me, 3) ] = 0;
#ifdef VAR_RANGES
		logval("alive[Ringback:me]", ((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ]));
#endif
		;
S_546_0: /* 2 */
		now.crashes = (((int)now.crashes)+1);
#ifdef VAR_RANGES
		logval("crashes", ((int)now.crashes));
#endif
		;
S_547_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_548_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_553_0: /* 2 */
S_549_0: /* 2 */
		if (!(((((int)now.js)==1)&&(((int)now.holder)==((int)((P0 *)_this)->me)))))
			goto S_553_1;
S_550_0: /* 2 */
		now.lockDead = 1;
#ifdef VAR_RANGES
		logval("lockDead", ((int)now.lockDead));
#endif
		;
		goto S_554_0;
S_553_1: /* 3 */
S_551_0: /* 2 */
		/* else */;
S_552_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_554_0;
S_553_2: /* 3 */
		Uerror("blocking sel in d_step (nr.54, near line 230)");
S_554_0: /* 2 */
S_559_0: /* 2 */
S_555_0: /* 2 */
		if (!(((((int)now.inAttempt)>0)&&((int)((P0 *)_this)->busyAttempt))))
			goto S_559_1;
S_556_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
		goto S_560_0;
S_559_1: /* 3 */
S_557_0: /* 2 */
		/* else */;
S_558_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_560_0;
S_559_2: /* 3 */
		Uerror("blocking sel in d_step (nr.55, near line 231)");
S_560_0: /* 2 */
S_561_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
		goto S_563_0;
S_563_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 87: // STATE 581 - window.pml:354 - [D_STEP354]
		if (!(((boq == -1 && (((int)now.R)||(((int)now.texts)>0)))) || ((boq == -1 && (((int)now.errs)<2))) || ((boq == -1 &&  !((((int)now.R)||(((int)now.texts)>0)))))))
			continue;

		reached[0][581] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_578_0: /* 2 */
S_569_0: /* 2 */
		if (!((((int)now.R)||(((int)now.texts)>0))))
			goto S_578_1;
S_570_0: /* 2 */
		((P0 *)_this)->found = 1;
#ifdef VAR_RANGES
		logval("Ringback:found", ((int)((P0 *)_this)->found));
#endif
		;
		goto S_579_0;
S_578_1: /* 3 */
S_571_0: /* 2 */
		if (!((((int)now.errs)<2)))
			goto S_578_2;
S_572_0: /* 2 */
		now.errs = (((int)now.errs)+1);
#ifdef VAR_RANGES
		logval("errs", ((int)now.errs));
#endif
		;
S_573_0: /* 2 */
		((P0 *)_this)->found = 0;
#ifdef VAR_RANGES
		logval("Ringback:found", ((int)((P0 *)_this)->found));
#endif
		;
S_574_0: /* 2 */
		((P0 *)_this)->res = 0;
#ifdef VAR_RANGES
		logval("Ringback:res", ((int)((P0 *)_this)->res));
#endif
		;
		goto S_579_0;
S_578_2: /* 3 */
S_575_0: /* 2 */
		if (!( !((((int)now.R)||(((int)now.texts)>0)))))
			goto S_578_3;
S_576_0: /* 2 */
		((P0 *)_this)->found = 0;
#ifdef VAR_RANGES
		logval("Ringback:found", ((int)((P0 *)_this)->found));
#endif
		;
S_577_0: /* 2 */
		((P0 *)_this)->res = ((int)now.rwin);
#ifdef VAR_RANGES
		logval("Ringback:res", ((int)((P0 *)_this)->res));
#endif
		;
		goto S_579_0;
S_578_3: /* 3 */
		Uerror("blocking sel in d_step (nr.56, near line 355)");
S_579_0: /* 2 */
		goto S_733_0;
S_733_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 88: // STATE 582 - window.pml:362 - [(found)] (0:0:1 - 1)
		IfNotBlocked
		reached[0][582] = 1;
		if (!(((int)((P0 *)_this)->found)))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: found */  (trpt+1)->bup.oval = ((P0 *)_this)->found;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->found = 0;
		_m = 3; goto P999; /* 0 */
	case 89: // STATE 593 - window.pml:177 - [D_STEP177]
		IfNotBlocked

		reached[0][593] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_582_0: /* 2 */
		now.C = 3;
#ifdef VAR_RANGES
		logval("C", ((int)now.C));
#endif
		;
S_583_0: /* 2 */
		now.cshort = 0;
#ifdef VAR_RANGES
		logval("cshort", ((int)now.cshort));
#endif
		;
S_589_0: /* 2 */
S_584_0: /* 2 */
		if (!(((((int)now.atok)==((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]))||(((int)now.ast)==0))))
			goto S_589_1;
S_585_0: /* 2 */
		now.ast = 4;
#ifdef VAR_RANGES
		logval("ast", ((int)now.ast));
#endif
		;
S_586_0: /* 2 */
		now.atok = ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]);
#ifdef VAR_RANGES
		logval("atok", ((int)now.atok));
#endif
		;
		goto S_590_0;
S_589_1: /* 3 */
S_587_0: /* 2 */
		/* else */;
S_588_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_590_0;
S_589_2: /* 3 */
		Uerror("blocking sel in d_step (nr.57, near line 179)");
S_590_0: /* 2 */
S_591_0: /* 2 */
		now.inI = 0;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
		goto S_617_0;
S_617_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 90: // STATE 595 - window.pml:363 - [((crashes<2))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][595] = 1;
		if (!((((int)now.crashes)<2)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 91: // STATE 613 - window.pml:228 - [D_STEP228]
		IfNotBlocked

		reached[0][613] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_595_0: /* 2 */
		now.alive[ Index(((P0 *)_this)->me, 3) ] = 0;
#ifdef VAR_RANGES
		logval("alive[Ringback:me]", ((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ]));
#endif
		;
S_596_0: /* 2 */
		now.crashes = (((int)now.crashes)+1);
#ifdef VAR_RANGES
		logval("crashes", ((int)now.crashes));
#endif
		;
S_597_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_598_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_603_0: /* 2 */
S_599_0: /* 2 */
		if (!(((((int)now.js)==1)&&(((int)now.holder)==((int)((P0 *)_this)->me)))))
			goto S_603_1;
S_600_0: /* 2 */
		now.lockDead = 1;
#ifdef VAR_RANGES
		logval("lockDead", ((int)now.lockDead));
#endif
		;
		goto S_604_0;
S_603_1: /* 3 */
S_601_0: /* 2 */
		/* else */;
S_602_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_604_0;
S_603_2: /* 3 */
		Uerror("blocking sel in d_step (nr.58, near line 230)");
S_604_0: /* 2 */
S_609_0: /* 2 */
S_605_0: /* 2 */
		if (!(((((int)now.inAttempt)>0)&&((int)((P0 *)_this)->busyAttempt))))
			goto S_609_1;
S_606_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
		goto S_610_0;
S_609_1: /* 3 */
S_607_0: /* 2 */
		/* else */;
S_608_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_610_0;
S_609_2: /* 3 */
		Uerror("blocking sel in d_step (nr.59, near line 231)");
S_610_0: /* 2 */
S_611_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
		goto S_613_0;
S_613_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 92: // STATE 639 - window.pml:244 - [D_STEP244]
		if (!(((boq == -1 && ((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead))))) || ((boq == -1 && ((((int)((P0 *)_this)->jobless)&&(1==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3))))) || (boq == -1 /* else */)))
			continue;

		reached[0][639] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_632_0: /* 2 */
S_619_0: /* 2 */
		if (!(((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead)))))
			goto S_632_1;
S_626_0: /* 2 */
S_620_0: /* 2 */
		if (!((1==1)))
			goto S_626_1;
S_621_0: /* 2 */
		now.js = 2;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_627_0;
S_626_1: /* 3 */
S_622_0: /* 2 */
		if (!((1==2)))
			goto S_626_2;
S_623_0: /* 2 */
		now.js = 0;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_627_0;
S_626_2: /* 3 */
S_624_0: /* 2 */
		if (!((1==3)))
			goto S_626_3;
S_625_0: /* 2 */
		now.js = 3;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_627_0;
S_626_3: /* 3 */
		Uerror("blocking sel in d_step (nr.60, near line 247)");
S_627_0: /* 2 */
		goto S_633_0;
S_632_1: /* 3 */
S_628_0: /* 2 */
		if (!(((((int)((P0 *)_this)->jobless)&&(1==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3)))))
			goto S_632_2;
S_629_0: /* 2 */
		now.inI = 1;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
		goto S_633_0;
S_632_2: /* 3 */
S_630_0: /* 2 */
		/* else */;
S_631_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_633_0;
S_632_3: /* 3 */
		Uerror("blocking sel in d_step (nr.61, near line 245)");
S_633_0: /* 2 */
S_634_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
S_635_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
S_636_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_637_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
		goto S_640_0;
S_640_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 93: // STATE 642 - window.pml:365 - [((!(found)&&(res==0)))] (0:0:2 - 1)
		IfNotBlocked
		reached[0][642] = 1;
		if (!(( !(((int)((P0 *)_this)->found))&&(((int)((P0 *)_this)->res)==0))))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: found */  (trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((P0 *)_this)->found;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->found = 0;
		if (TstOnly) return 1; /* TT */
		/* dead 1: res */  (trpt+1)->bup.ovals[1] = ((P0 *)_this)->res;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->res = 0;
		_m = 3; goto P999; /* 0 */
	case 94: // STATE 662 - window.pml:244 - [D_STEP244]
		if (!(((boq == -1 && ((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead))))) || ((boq == -1 && ((((int)((P0 *)_this)->jobless)&&(2==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3))))) || (boq == -1 /* else */)))
			continue;

		reached[0][662] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_655_0: /* 2 */
S_642_0: /* 2 */
		if (!(((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead)))))
			goto S_655_1;
S_649_0: /* 2 */
S_643_0: /* 2 */
		if (!((2==1)))
			goto S_649_1;
S_644_0: /* 2 */
		now.js = 2;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_650_0;
S_649_1: /* 3 */
S_645_0: /* 2 */
		if (!((2==2)))
			goto S_649_2;
S_646_0: /* 2 */
		now.js = 0;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_650_0;
S_649_2: /* 3 */
S_647_0: /* 2 */
		if (!((2==3)))
			goto S_649_3;
S_648_0: /* 2 */
		now.js = 3;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_650_0;
S_649_3: /* 3 */
		Uerror("blocking sel in d_step (nr.62, near line 247)");
S_650_0: /* 2 */
		goto S_656_0;
S_655_1: /* 3 */
S_651_0: /* 2 */
		if (!(((((int)((P0 *)_this)->jobless)&&(2==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3)))))
			goto S_655_2;
S_652_0: /* 2 */
		now.inI = 1;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
		goto S_656_0;
S_655_2: /* 3 */
S_653_0: /* 2 */
		/* else */;
S_654_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_656_0;
S_655_3: /* 3 */
		Uerror("blocking sel in d_step (nr.63, near line 245)");
S_656_0: /* 2 */
S_657_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
S_658_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
S_659_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_660_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
		goto S_663_0;
S_663_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 95: // STATE 665 - window.pml:366 - [((!(found)&&(res==1)))] (0:0:2 - 1)
		IfNotBlocked
		reached[0][665] = 1;
		if (!(( !(((int)((P0 *)_this)->found))&&(((int)((P0 *)_this)->res)==1))))
			continue;
		if (TstOnly) return 1; /* TT */
		/* dead 1: found */  (trpt+1)->bup.ovals = grab_ints(2);
		(trpt+1)->bup.ovals[0] = ((P0 *)_this)->found;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->found = 0;
		if (TstOnly) return 1; /* TT */
		/* dead 1: res */  (trpt+1)->bup.ovals[1] = ((P0 *)_this)->res;
#ifdef HAS_CODE
		if (!readtrail)
#endif
			((P0 *)_this)->res = 0;
		_m = 3; goto P999; /* 0 */
	case 96: // STATE 679 - window.pml:187 - [D_STEP187]
		if (!(((boq == -1 && ((((int)now.C)==2)&&(((int)now.ctok)==((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]))))) || (boq == -1 /* else */)))
			continue;

		reached[0][679] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_669_0: /* 2 */
S_665_0: /* 2 */
		if (!(((((int)now.C)==2)&&(((int)now.ctok)==((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ])))))
			goto S_669_1;
S_666_0: /* 2 */
		now.C = 0;
#ifdef VAR_RANGES
		logval("C", ((int)now.C));
#endif
		;
		goto S_670_0;
S_669_1: /* 3 */
S_667_0: /* 2 */
		/* else */;
S_668_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_670_0;
S_669_2: /* 3 */
		Uerror("blocking sel in d_step (nr.64, near line 188)");
S_670_0: /* 2 */
S_676_0: /* 2 */
S_671_0: /* 2 */
		if (!(((((int)now.atok)==((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]))&&(((int)now.ast)!=0))))
			goto S_676_1;
S_672_0: /* 2 */
		now.ast = 5;
#ifdef VAR_RANGES
		logval("ast", ((int)now.ast));
#endif
		;
S_673_0: /* 2 */
		now.inI = 0;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
		goto S_677_0;
S_676_1: /* 3 */
S_674_0: /* 2 */
		/* else */;
S_675_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_677_0;
S_676_2: /* 3 */
		Uerror("blocking sel in d_step (nr.65, near line 189)");
S_677_0: /* 2 */
		goto S_703_0;
S_703_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 97: // STATE 681 - window.pml:369 - [((crashes<2))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][681] = 1;
		if (!((((int)now.crashes)<2)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 98: // STATE 699 - window.pml:228 - [D_STEP228]
		IfNotBlocked

		reached[0][699] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_681_0: /* 2 */
		now.alive[ Index(((P0 *)_this)->me, 3) ] = 0;
#ifdef VAR_RANGES
		logval("alive[Ringback:me]", ((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ]));
#endif
		;
S_682_0: /* 2 */
		now.crashes = (((int)now.crashes)+1);
#ifdef VAR_RANGES
		logval("crashes", ((int)now.crashes));
#endif
		;
S_683_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_684_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_689_0: /* 2 */
S_685_0: /* 2 */
		if (!(((((int)now.js)==1)&&(((int)now.holder)==((int)((P0 *)_this)->me)))))
			goto S_689_1;
S_686_0: /* 2 */
		now.lockDead = 1;
#ifdef VAR_RANGES
		logval("lockDead", ((int)now.lockDead));
#endif
		;
		goto S_690_0;
S_689_1: /* 3 */
S_687_0: /* 2 */
		/* else */;
S_688_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_690_0;
S_689_2: /* 3 */
		Uerror("blocking sel in d_step (nr.66, near line 230)");
S_690_0: /* 2 */
S_695_0: /* 2 */
S_691_0: /* 2 */
		if (!(((((int)now.inAttempt)>0)&&((int)((P0 *)_this)->busyAttempt))))
			goto S_695_1;
S_692_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
		goto S_696_0;
S_695_1: /* 3 */
S_693_0: /* 2 */
		/* else */;
S_694_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_696_0;
S_695_2: /* 3 */
		Uerror("blocking sel in d_step (nr.67, near line 231)");
S_696_0: /* 2 */
S_697_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
		goto S_699_0;
S_699_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 99: // STATE 703 - window.pml:369 - [(1)] (732:0:1 - 1)
		IfNotBlocked
		reached[0][703] = 1;
		if (!(1))
			continue;
		/* merge: .(goto)(732, 705, 732) */
		reached[0][705] = 1;
		;
		/* merge: sup = 0(732, 706, 732) */
		reached[0][706] = 1;
		(trpt+1)->bup.oval = ((int)((P0 *)_this)->sup);
		((P0 *)_this)->sup = 0;
#ifdef VAR_RANGES
		logval("Ringback:sup", ((int)((P0 *)_this)->sup));
#endif
		;
		_m = 3; goto P999; /* 2 */
	case 100: // STATE 706 - window.pml:370 - [sup = 0] (0:732:1 - 2)
		IfNotBlocked
		reached[0][706] = 1;
		(trpt+1)->bup.oval = ((int)((P0 *)_this)->sup);
		((P0 *)_this)->sup = 0;
#ifdef VAR_RANGES
		logval("Ringback:sup", ((int)((P0 *)_this)->sup));
#endif
		;
		_m = 3; goto P999; /* 0 */
	case 101: // STATE 707 - window.pml:374 - [((loops<3))] (0:0:0 - 1)
		IfNotBlocked
		reached[0][707] = 1;
		if (!((((int)((P0 *)_this)->loops)<3)))
			continue;
		_m = 3; goto P999; /* 0 */
	case 102: // STATE 729 - window.pml:244 - [D_STEP244]
		if (!(((boq == -1 && ((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead))))) || ((boq == -1 && ((((int)((P0 *)_this)->jobless)&&(2==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3))))) || (boq == -1 /* else */)))
			continue;

		reached[0][729] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_722_0: /* 2 */
S_709_0: /* 2 */
		if (!(((( !(((int)((P0 *)_this)->jobless))&&(((int)now.js)==1))&&(((int)now.holder)==((int)((P0 *)_this)->me)))&& !(((int)now.lockDead)))))
			goto S_722_1;
S_716_0: /* 2 */
S_710_0: /* 2 */
		if (!((2==1)))
			goto S_716_1;
S_711_0: /* 2 */
		now.js = 2;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_717_0;
S_716_1: /* 3 */
S_712_0: /* 2 */
		if (!((2==2)))
			goto S_716_2;
S_713_0: /* 2 */
		now.js = 0;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_717_0;
S_716_2: /* 3 */
S_714_0: /* 2 */
		if (!((2==3)))
			goto S_716_3;
S_715_0: /* 2 */
		now.js = 3;
#ifdef VAR_RANGES
		logval("js", ((int)now.js));
#endif
		;
		goto S_717_0;
S_716_3: /* 3 */
		Uerror("blocking sel in d_step (nr.68, near line 247)");
S_717_0: /* 2 */
		goto S_723_0;
S_722_1: /* 3 */
S_718_0: /* 2 */
		if (!(((((int)((P0 *)_this)->jobless)&&(2==2))&&(((((int)now.ast)==1)||(((int)now.ast)==2))||(((int)now.ast)==3)))))
			goto S_722_2;
S_719_0: /* 2 */
		now.inI = 1;
#ifdef VAR_RANGES
		logval("inI", ((int)now.inI));
#endif
		;
		goto S_723_0;
S_722_2: /* 3 */
S_720_0: /* 2 */
		/* else */;
S_721_0: /* 2 */
		if (!(1))
			Uerror("block in d_step seq");
		goto S_723_0;
S_722_3: /* 3 */
		Uerror("blocking sel in d_step (nr.69, near line 245)");
S_723_0: /* 2 */
S_724_0: /* 2 */
		now.inAttempt = (((int)now.inAttempt)-1);
#ifdef VAR_RANGES
		logval("inAttempt", ((int)now.inAttempt));
#endif
		;
S_725_0: /* 2 */
		((P0 *)_this)->busyAttempt = 0;
#ifdef VAR_RANGES
		logval("Ringback:busyAttempt", ((int)((P0 *)_this)->busyAttempt));
#endif
		;
S_726_0: /* 2 */
		now.tok[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("tok[Ringback:me]", ((int)now.tok[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
S_727_0: /* 2 */
		now.sending[ Index(((P0 *)_this)->me, 2) ] = 0;
#ifdef VAR_RANGES
		logval("sending[Ringback:me]", ((int)now.sending[ Index(((int)((P0 *)_this)->me), 2) ]));
#endif
		;
		goto S_730_0;
S_730_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 103: // STATE 739 - window.pml:382 - [D_STEP382]
		if (!(boq == -1 &&  !(((int)now.rolledBack))))
			continue;

		reached[0][739] = 1;
		reached[0][t->st] = 1;
		reached[0][tt] = 1;

		if (TstOnly) return 1;

		sv_save();
		S_736_0: /* 2 */
		if (!( !(((int)now.rolledBack))))
			Uerror("block in d_step seq");
S_737_0: /* 2 */
		now.alive[ Index(((P0 *)_this)->me, 3) ] = 1;
#ifdef VAR_RANGES
		logval("alive[Ringback:me]", ((int)now.alive[ Index(((int)((P0 *)_this)->me), 3) ]));
#endif
		;
		goto S_739_0;
S_739_0: /* 1 */

#if defined(C_States) && (HAS_TRACK==1)
		c_update((uchar *) &(now.c_state[0]));
#endif
		_m = 3; goto P999;

	case 104: // STATE 744 - window.pml:384 - [-end-] (0:0:0 - 1)
		IfNotBlocked
		reached[0][744] = 1;
		if (!delproc(1, II)) continue;
		_m = 3; goto P999; /* 0 */
	case  _T5:	/* np_ */
		if (!((!(trpt->o_pm&4) && !(trpt->tau&128))))
			continue;
		/* else fall through */
	case  _T2:	/* true */
		_m = 3; goto P999;
#undef rand
	}

